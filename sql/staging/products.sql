-- One row per product that passed the contract checks (grain: productId).
-- @column product_id: Product identifier
-- @column category_id: Category of the product
-- @column group_id: Group of the product
-- @column name: Product name
-- @column rarity: Rarity label (may be null)
-- @column number: Card number (may be null)
-- @column source_file: Input file of the row, relative to the input directory
-- @column source_row: Data record number in that file, from 1
with
-- valid_products (made by the runner): the rows of raw.products without a row-level reject,
-- every declared column parsed to its contract type, defaults applied (`checks.parsed`)
valid as (select * from valid_products),
final as (
    select
        "productId" as product_id,
        "categoryId" as category_id,
        "groupId" as group_id,
        "name" as name,
        "rarity" as rarity,
        "number" as number,
        _source_file as source_file,
        _source_row as source_row
    from valid
)
select * from final
