-- One row per printing that passed the contract checks (grain: printingId).
with
-- valid_printings (made by the runner): the rows of raw.printings without a row-level reject,
-- every declared column parsed to its contract type, defaults applied (`rules.parsed`)
valid as (select * from valid_printings),
final as (
    select
        "printingId" as printing_id,
        "name" as name,
        coalesce("foil", false) as foil,
        "displayOrder" as display_order,
        "modifiedOn" as modified_on,
        _source_file as source_file,
        _source_row as source_row
    from valid
)
select * from final
