-- GET /v1.39.0/catalog/products/{productIds} (Catalog_GetProduct), docs/contract.md §7. One
-- row per product of $ids found, in the order first given, written as catalog/products does.
with
-- @include api/asked_ids
products as (select * from export.catalog_product),
final as (
    select
        null::bigint as path_id,
        asked.position::bigint as position,
        null::bigint as total_items,
        asked.id::bigint as item_id,
        concat(
            products.head_json,
            case when $get_extended_fields then products.extended_json end,
            case when $include_skus then products.skus_json end,
            '}'
        ) as result_json
    from asked
    join products on products.product_id = asked.id
)
select * from final order by position
