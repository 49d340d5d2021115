-- GET /v1.39.0/catalog/products/{productIds} (Catalog_GetProduct), docs/contract.md §7. One
-- row per product of $ids found, written as catalog/products does; the answer takes them in
-- the order the ids are first given.
with
products as (select * from export.catalog_product),
final as (
    select
        null::bigint as path_id,
        (row_number() over (order by product_id))::bigint as position,
        null::bigint as total_items,
        product_id::bigint as item_id,
        concat(
            head_json,
            case when $get_extended_fields then extended_json end,
            case when $include_skus then skus_json end,
            '}'
        ) as result_json
    from products
    where product_id = any($ids::bigint[])
)
select * from final order by position
