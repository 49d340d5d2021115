-- One row per known store (marts.store) on one published night: its accepted listings, on every
-- channel and of any quantity, with their quantity and value.
-- @column build_id: The night's build (meta.build_run), the one file it was written to
-- @column built_at: When the night's build started (UTC)
-- @column store_key: Store key, lower-case
-- @column listing_count: Accepted listings of the store, all channels, any quantity
-- @column quantity: Quantity for sale over those listings
-- @column inventory_value: Sum of price x quantity over those listings (0.00: none)
with
stores as (select * from marts.store),
listings as (select * from marts.listing),
volumes as (
    select
        store_key,
        count(*) as listing_count,
        sum(quantity) as quantity,
        sum(price * quantity) as inventory_value
    from listings
    group by store_key
),
final as (
    select
        $build_id::varchar as build_id,
        $built_at::timestamp as built_at,
        stores.store_key,
        coalesce(volumes.listing_count, 0)::bigint as listing_count,
        coalesce(volumes.quantity, 0)::bigint as quantity,
        coalesce(volumes.inventory_value, 0)::decimal(18, 2) as inventory_value
    from stores
    left join volumes using (store_key)
)
select * from final order by store_key
