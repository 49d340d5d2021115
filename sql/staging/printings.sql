-- One row per printing that passed the contract checks (grain: printingId).
-- @column printing_id: Printing identifier
-- @column name: Printing name
-- @column foil: Whether the printing is foil (a null in the input is false)
-- @column source_file: Input file of the row, relative to the input directory
-- @column source_row: Data record number in that file, from 1
with
-- Casts are try_cast: the row checks have already rejected every value that does not
-- parse, and DuckDB may evaluate a cast before the anti-join has removed those rows.
-- valid_printings: the rows of raw.printings without a row-level reject (made by the runner)
valid as (select * from valid_printings),
final as (
    select
        try_cast(trim("printingId") as integer) as printing_id,
        cast("name" as varchar) as name,
        coalesce(as_bool("foil"), false) as foil,
        _source_file as source_file,
        _source_row as source_row
    from valid
)
select * from final
