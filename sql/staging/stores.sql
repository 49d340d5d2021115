-- One row per row of the stores file that passed the contract checks.
-- Store keys are matched case-insensitively, so they are stored lower-case.
with
-- valid_stores (made by the runner): the rows of raw.stores without a row-level reject,
-- every declared column parsed to its contract type, defaults applied (`rules.parsed`)
valid as (select * from valid_stores),
final as (
    select
        lower("storeKey") as store_key,
        "name" as name,
        _source_file as source_file,
        _source_row as source_row
    from valid
)
select * from final
