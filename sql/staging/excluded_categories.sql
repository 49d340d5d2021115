-- One row per (store, channel, category) exclusion row that passed the contract checks.
-- @column store_key: Store key, lower-case
-- @column channel_id: Sales channel the exclusion applies to
-- @column category_id: Excluded category
-- @column source_file: Input file of the row, relative to the input directory
-- @column source_row: Data record number in that file, from 1
with
-- valid_excluded_categories (made by the runner): the rows of raw.excluded_categories
-- without a row-level reject, every declared column parsed to its contract type, defaults
-- applied (`checks.parsed`)
valid as (select * from valid_excluded_categories),
final as (
    select
        lower("storeKey") as store_key,
        "channelId" as channel_id,
        "categoryId" as category_id,
        _source_file as source_file,
        _source_row as source_row
    from valid
)
select * from final
