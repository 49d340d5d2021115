-- One row per group (set) that passed the contract checks (grain: groupId).
-- @column group_id: Group identifier
-- @column category_id: Category of the group
-- @column name: Group name
-- @column abbreviation: Set code
-- @column source_file: Input file of the row, relative to the input directory
-- @column source_row: Data record number in that file, from 1
with
-- valid_groups (made by the runner): the rows of raw.groups without a row-level reject,
-- every declared column parsed to its contract type, defaults applied (`checks.parsed`)
valid as (select * from valid_groups),
final as (
    select
        "groupId" as group_id,
        "categoryId" as category_id,
        "name" as name,
        "abbreviation" as abbreviation,
        _source_file as source_file,
        _source_row as source_row
    from valid
)
select * from final
