-- One row per (store, channel, category) exclusion row that passed the contract checks.
with
-- valid_excluded_categories (made by the runner): the rows of raw.excluded_categories
-- without a row-level reject, every declared column parsed to its contract type, defaults
-- applied (`rules.parsed`)
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
