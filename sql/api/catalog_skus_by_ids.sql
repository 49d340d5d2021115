-- GET /v1.39.0/catalog/skus/{skuIds} (Catalog_GetSkus), docs/contract.md §7. One row per SKU of
-- $ids found; the answer takes them in the order the ids are first given.
with
skus as (select * from staging.skus),
final as (
    select
        null::bigint as path_id,
        sku_id::bigint as position,
        null::bigint as total_items,
        sku_id::bigint as item_id,
        json_catalog_sku(sku_id, product_id, language_id, printing_id, condition_id) as result_json
    from skus
    where sku_id = any($ids::bigint[])
)
select * from final order by position
