-- One row per language that passed the contract checks (grain: languageId).
-- @column language_id: Language identifier
-- @column name: Language name
-- @column abbr: Abbreviation (may be null)
-- @column source_file: Input file of the row, relative to the input directory
-- @column source_row: Data record number in that file, from 1
with
-- Casts are try_cast: the row checks have already rejected every value that does not
-- parse, and DuckDB may evaluate a cast before the anti-join has removed those rows.
-- valid_languages: the rows of raw.languages without a row-level reject (made by the runner)
valid as (select * from valid_languages),
final as (
    select
        try_cast(trim("languageId") as integer) as language_id,
        cast("name" as varchar) as name,
        cast(cell("abbr") as varchar) as abbr,
        _source_file as source_file,
        _source_row as source_row
    from valid
)
select * from final
