-- One row per SKU that passed the contract checks (grain: skuId).
-- @column sku_id: SKU identifier
-- @column product_id: Product of the SKU
-- @column condition_id: Condition (may have no row in staging.conditions)
-- @column language_id: Language (may have no row in staging.languages)
-- @column printing_id: Printing (may have no row in staging.printings)
-- @column source_file: Input file of the row, relative to the input directory
-- @column source_row: Data record number in that file, from 1
with
-- Casts are try_cast: the row checks have already rejected every value that does not
-- parse, and DuckDB may evaluate a cast before the anti-join has removed those rows.
-- valid_skus: the rows of raw.skus without a row-level reject (made by the runner)
valid as (select * from valid_skus),
final as (
    select
        try_cast(trim("skuId") as bigint) as sku_id,
        try_cast(trim("productId") as bigint) as product_id,
        try_cast(trim("conditionId") as bigint) as condition_id,
        try_cast(trim("languageId") as integer) as language_id,
        try_cast(trim("printingId") as integer) as printing_id,
        _source_file as source_file,
        _source_row as source_row
    from valid
)
select * from final
