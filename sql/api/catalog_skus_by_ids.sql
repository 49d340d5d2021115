-- GET /v1.39.0/catalog/skus/{skuIds} (Catalog_GetSkus), docs/contract.md §7. One row per SKU of
-- $ids found; the answer takes them in the order the ids are first given.
with
skus as (select * from export.catalog_sku),
final as (
    select
        null::bigint as path_id,
        sku_id::bigint as position,
        null::bigint as total_items,
        sku_id::bigint as item_id,
        sku_json as result_json
    from skus
    where sku_id = any($ids::bigint[])
)
select * from final order by position
