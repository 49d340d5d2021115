-- One row per SKU that passed the contract checks (grain: skuId).
-- @column sku_id: SKU identifier
-- @column product_id: Product of the SKU
-- @column condition_id: Condition (may have no row in staging.conditions)
-- @column language_id: Language (may have no row in staging.languages)
-- @column printing_id: Printing (may have no row in staging.printings)
-- @column source_file: Input file of the row, relative to the input directory
-- @column source_row: Data record number in that file, from 1
with
-- valid_skus (made by the runner): the rows of raw.skus without a row-level reject,
-- every declared column parsed to its contract type, defaults applied (`checks.parsed`)
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
