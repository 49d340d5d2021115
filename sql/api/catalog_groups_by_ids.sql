-- GET /v1.39.0/catalog/groups/{groupIds}, docs/contract.md §7. One row per group of $ids found;
-- the answer takes them in the order the ids are first given.
with
groups as (select * from export.catalog_group),
final as (
    select
        null::bigint as path_id,
        group_id::bigint as position,
        null::bigint as total_items,
        group_id::bigint as item_id,
        group_json as result_json
    from groups
    where group_id = any($ids::bigint[])
)
select * from final order by position
