-- GET /v1.39.0/catalog/groups/{groupIds}, docs/contract.md §7. One row per group of $ids
-- found, in the order first given.
with
-- @include api/asked_ids
groups as (select * from export.catalog_group),
final as (
    select
        null::bigint as path_id,
        asked.position::bigint as position,
        null::bigint as total_items,
        asked.id::bigint as item_id,
        groups.group_json as result_json
    from asked
    join groups on groups.group_id = asked.id
)
select * from final order by position
