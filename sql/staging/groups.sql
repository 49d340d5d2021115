-- One row per group (set) that passed the contract checks (grain: groupId).
with
-- valid_groups (made by the runner): the rows of raw.groups without a row-level reject,
-- every declared column parsed to its contract type, defaults applied (`rules.parsed`)
valid as (select * from valid_groups),
final as (
    select
        "groupId" as group_id,
        "categoryId" as category_id,
        "name" as name,
        "abbreviation" as abbreviation,
        "isSupplemental" as is_supplemental,
        "publishedOn" as published_on,
        "modifiedOn" as modified_on,
        _source_file as source_file,
        _source_row as source_row
    from valid
)
select * from final
