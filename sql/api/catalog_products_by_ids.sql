-- GET /v1.39.0/catalog/products/{productIds} (Catalog_GetProduct), docs/contract.md §7. One
-- row per product of $ids found, written as catalog/products does; the answer takes them in
-- the order the ids are first given.
with
asked as (
    select product_id, head_json, extended_json
    from export.catalog_product
    where product_id = any($ids::bigint[])
),
-- @include api/parts/catalog_product_json
final as (
    select
        null::bigint as path_id,
        product_id::bigint as position,
        null::bigint as total_items,
        product_id::bigint as item_id,
        product_json as result_json
    from written
)
select * from final order by position
