-- GET /v1.39.0/catalog/products/{productId}/skus (Catalog_GetSkusByProductId),
-- docs/contract.md §7. One row per SKU of product $item_id, by skuId.
with
skus as (select * from staging.skus),
final as (
    select
        $item_id::bigint as path_id,
        (row_number() over (order by sku_id))::bigint as position,
        (count(*) over ())::bigint as total_items,
        sku_id::bigint as item_id,
        json_catalog_sku(sku_id, product_id, language_id, printing_id, condition_id) as result_json
    from skus
    where product_id = $item_id
)
select * from final order by position
