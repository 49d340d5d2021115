-- One row per (store, channel, category) exclusion row that passed the contract checks.
-- @column store_key: Store key, lower-case
-- @column channel_id: Sales channel the exclusion applies to
-- @column category_id: Excluded category
-- @column source_file: Input file of the row, relative to the input directory
-- @column source_row: Data record number in that file, from 1
with
-- Casts are try_cast: the row checks have already rejected every value that does not
-- parse, and DuckDB may evaluate a cast before the anti-join has removed those rows.
-- valid_excluded_categories: the rows of raw.excluded_categories without a row-level reject (made by the runner)
valid as (select * from valid_excluded_categories),
final as (
    select
        cast(lower("storeKey") as varchar) as store_key,
        try_cast(trim(coalesce(cell("channelId"), '0')) as integer) as channel_id,
        try_cast(trim("categoryId") as integer) as category_id,
        _source_file as source_file,
        _source_row as source_row
    from valid
)
select * from final
