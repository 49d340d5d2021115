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
-- Casts are try_cast: the row checks have already rejected every value that does not
-- parse, and DuckDB may evaluate a cast before the anti-join has removed those rows.
-- valid_products: the rows of raw.products without a row-level reject (made by the runner)
valid as (select * from valid_products),
final as (
    select
        try_cast(trim("productId") as bigint) as product_id,
        try_cast(trim("categoryId") as integer) as category_id,
        try_cast(trim("groupId") as bigint) as group_id,
        cast("name" as varchar) as name,
        cast(cell("rarity") as varchar) as rarity,
        cast(cell("number") as varchar) as number,
        _source_file as source_file,
        _source_row as source_row
    from valid
)
select * from final
