-- One row per SKU that passed the contract checks (grain: skuId).
with
-- valid_skus (made by the runner): the rows of raw.skus without a row-level reject,
-- every declared column parsed to its contract type, defaults applied (`rules.parsed`)
valid as (select * from valid_skus),
final as (
    select
        "skuId" as sku_id,
        "productId" as product_id,
        "conditionId" as condition_id,
        "languageId" as language_id,
        "printingId" as printing_id,
        _source_file as source_file,
        _source_row as source_row
    from valid
)
select * from final
