-- One row per condition: its Condition JSON object of the catalog (docs/contract.md §7) and
-- its place in catalog/conditions' order (displayOrder, nulls last, then conditionId).
-- @column condition_id: Condition identifier
-- @column condition_rank: The condition's place in the order (1-based)
-- @column condition_json: '{"conditionId":..,"name":..,"abbreviation":..,"displayOrder":..}'
with
conditions as (select * from staging.conditions),
final as (
    select
        condition_id,
        row_number() over (order by display_order asc nulls last, condition_id) as condition_rank,
        concat(
            '{"conditionId":', condition_id,
            ',"name":', json_text(name),
            ',"abbreviation":', json_text(abbreviation),
            ',"displayOrder":', coalesce(display_order::varchar, 'null'), '}'
        ) as condition_json
    from conditions
)
select * from final order by condition_rank
