-- One row per condition that passed the contract checks (grain: conditionId).
-- @column condition_id: Condition identifier
-- @column name: Condition name
-- @column abbreviation: Short name
-- @column display_order: Order in condition lists
-- @column source_file: Input file of the row, relative to the input directory
-- @column source_row: Data record number in that file, from 1
with
-- Casts are try_cast: the row checks have already rejected every value that does not
-- parse, and DuckDB may evaluate a cast before the anti-join has removed those rows.
-- valid_conditions: the rows of raw.conditions without a row-level reject (made by the runner)
valid as (select * from valid_conditions),
final as (
    select
        try_cast(trim("conditionId") as bigint) as condition_id,
        cast("name" as varchar) as name,
        cast(cell("abbreviation") as varchar) as abbreviation,
        try_cast(trim(cell("displayOrder")) as integer) as display_order,
        _source_file as source_file,
        _source_row as source_row
    from valid
)
select * from final
