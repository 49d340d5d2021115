-- One row per catalog SKU: its catalog Sku JSON object (docs/contract.md §7), shared by a
-- product's SKUs, the SKUs by ids and the products' `skus`.
-- @column sku_id: SKU identifier
-- @column product_id: Product of the SKU
-- @column sku_json: '{"skuId":..,"productId":..,"languageId":..,"printingId":..,"conditionId":..}'
with
skus as (select * from staging.skus),
final as (
    select
        sku_id,
        product_id,
        concat(
            '{"skuId":', sku_id,
            ',"productId":', product_id,
            ',"languageId":', language_id,
            ',"printingId":', printing_id,
            ',"conditionId":', condition_id, '}'
        ) as sku_json
    from skus
)
select * from final order by sku_id
