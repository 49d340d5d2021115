-- One row per group (set) that passed the contract checks (grain: groupId).
-- @column group_id: Group identifier
-- @column category_id: Category of the group
-- @column name: Group name
-- @column abbreviation: Set code
-- @column source_file: Input file of the row, relative to the input directory
-- @column source_row: Data record number in that file, from 1
with
-- Casts are try_cast: the row checks have already rejected every value that does not
-- parse, and DuckDB may evaluate a cast before the anti-join has removed those rows.
-- valid_groups: the rows of raw.groups without a row-level reject (made by the runner)
valid as (select * from valid_groups),
final as (
    select
        try_cast(trim("groupId") as bigint) as group_id,
        try_cast(trim("categoryId") as integer) as category_id,
        cast("name" as varchar) as name,
        cast(cell("abbreviation") as varchar) as abbreviation,
        _source_file as source_file,
        _source_row as source_row
    from valid
)
select * from final
