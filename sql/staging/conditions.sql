-- One row per condition that passed the contract checks (grain: conditionId).
with
-- valid_conditions (made by the runner): the rows of raw.conditions without a row-level reject,
-- every declared column parsed to its contract type, defaults applied (`rules.parsed`)
valid as (select * from valid_conditions),
final as (
    select
        "conditionId" as condition_id,
        "name" as name,
        "abbreviation" as abbreviation,
        "displayOrder" as display_order,
        _source_file as source_file,
        _source_row as source_row
    from valid
)
select * from final
