-- GET /v1.39.0/catalog/products/{productId}/skus (Catalog_GetSkusByProductId),
-- docs/contract.md §7. One row per SKU of product $item_id, by skuId.
with
skus as (select * from export.catalog_sku),
final as (
    select
        $item_id::bigint as path_id,
        (row_number() over (order by sku_id))::bigint as position,
        (count(*) over ())::bigint as total_items,
        sku_id::bigint as item_id,
        sku_json as result_json
    from skus
    where product_id = $item_id
)
select * from final order by position
