-- GET /v1.39.0/catalog/conditions (Catalog_GetConditions), docs/contract.md §7. One row per
-- condition, by displayOrder (nulls last), then conditionId.
with
conditions as (select * from export.condition),
final as (
    select
        null::bigint as path_id,
        condition_rank::bigint as position,
        (count(*) over ())::bigint as total_items,
        condition_id::bigint as item_id,
        condition_json as result_json
    from conditions
)
select * from final order by position
