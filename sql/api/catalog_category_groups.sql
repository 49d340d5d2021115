-- GET /v1.39.0/catalog/categories/{categoryId}/groups (Catalog_GetCategoryGroups),
-- docs/contract.md §7. One row per group of category $item_id, by lower-cased name then
-- groupId; $first_position / $last_position (1-based, inclusive, null for no bound) cut the page.
with
groups as (select * from export.catalog_group),
numbered as (
    select
        group_id,
        group_json,
        row_number() over (order by name_key, group_id) as position,
        count(*) over () as total_items
    from groups
    where category_id = $item_id
),
final as (
    select
        position::bigint as position,
        total_items::bigint as total_items,
        group_id::bigint as item_id,
        group_json as result_json
    from numbered
    where ($first_position is null or position >= $first_position)
      and ($last_position is null or position <= $last_position)
)
select * from final order by position
