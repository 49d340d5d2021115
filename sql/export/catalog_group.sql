-- One row per group: its Group JSON object (docs/contract.md §7), keys in the official
-- document's order, times as the live service writes them (json_time), nulls written as null.
-- @column group_id: Group identifier
-- @column category_id: Category of the group
-- @column name_key: Lower-cased group name, the key of a category's groups' order
-- @column group_json: The Group object
with
groups as (select * from staging.groups),
final as (
    select
        group_id,
        category_id,
        lower(name) as name_key,
        concat(
            '{"groupId":', group_id,
            ',"name":', json_text(name),
            ',"abbreviation":', json_text(abbreviation),
            ',"isSupplemental":', json_bool(is_supplemental),
            ',"publishedOn":', json_time(published_on),
            ',"modifiedOn":', json_time(modified_on),
            ',"categoryId":', category_id, '}'
        ) as group_json
    from groups
)
select * from final order by category_id, name_key, group_id
