-- One row per row of the stores file that passed the contract checks.
-- Store keys are matched case-insensitively, so they are stored lower-case.
-- @column store_key: Store key, lower-case
-- @column name: Store name
-- @column source_file: Input file of the row, relative to the input directory
-- @column source_row: Data record number in that file, from 1
with
-- Casts are try_cast: the row checks have already rejected every value that does not
-- parse, and DuckDB may evaluate a cast before the anti-join has removed those rows.
-- valid_stores: the rows of raw.stores without a row-level reject (made by the runner)
valid as (select * from valid_stores),
final as (
    select
        cast(lower("storeKey") as varchar) as store_key,
        cast(cell("name") as varchar) as name,
        _source_file as source_file,
        _source_row as source_row
    from valid
)
select * from final
