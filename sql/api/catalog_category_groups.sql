-- GET /v1.39.0/catalog/categories/{categoryId}/groups (Catalog_GetCategoryGroups),
-- docs/contract.md §7. One row per group of category $item_id (null: of every category, for the
-- exporter), by lower-cased name then groupId; $first_position / $last_position (1-based,
-- inclusive, null for no bound) cut the page.
with
groups as (select * from export.catalog_group),
numbered as (
    select
        category_id,
        group_id,
        group_json,
        row_number() over (partition by category_id order by name_key, group_id) as position,
        count(*) over (partition by category_id) as total_items
    from groups
    where $item_id is null or category_id = $item_id
),
final as (
    select
        category_id::bigint as path_id,
        position::bigint as position,
        total_items::bigint as total_items,
        group_id::bigint as item_id,
        group_json as result_json
    from numbered
    where ($first_position is null or position >= $first_position)
      and ($last_position is null or position <= $last_position)
)
select * from final order by path_id, position
