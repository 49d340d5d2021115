-- One row per language that passed the contract checks (grain: languageId).
with
-- valid_languages (made by the runner): the rows of raw.languages without a row-level reject,
-- every declared column parsed to its contract type, defaults applied (`rules.parsed`)
valid as (select * from valid_languages),
final as (
    select
        "languageId" as language_id,
        "name" as name,
        "abbr" as abbr,
        _source_file as source_file,
        _source_row as source_row
    from valid
)
select * from final
