-- One row per known store: in the stores file or with at least one accepted listing.
-- @column store_key: Store key, lower-case (the key of the published pages)
-- @column name: Store name from the stores file (may be null)
-- @column in_stores_file: Whether the store has a row in the stores file
-- @column listing_count: Accepted listings of the store, all channels, any quantity
-- @column channel_count: Channels the store has listings on
with
stores as (select * from staging.stores),
listings as (select * from staging.listings),
from_file as (
    -- The first named row (by file, then row) wins when a store appears more than once.
    select
        store_key,
        arg_min(name, (source_file, source_row)) filter (where name is not null) as name
    from stores
    group by store_key
),
from_listings as (
    select store_key, count(*) as listing_count, count(distinct channel_id) as channel_count
    from listings
    group by store_key
),
final as (
    select
        coalesce(f.store_key, l.store_key) as store_key,
        f.name,
        f.store_key is not null as in_stores_file,
        coalesce(l.listing_count, 0)::bigint as listing_count,
        coalesce(l.channel_count, 0)::bigint as channel_count
    from from_file as f
    full join from_listings as l on l.store_key = f.store_key
)
select * from final order by store_key
