-- GET /v1.39.0/stores/{storeKey}/inventory/categories (Stores_GetStoreCategories),
-- docs/contract.md §5.4: one row per (store, channel, category) of the store's matching
-- products (generic and custom listings; quantity > 0 unless not $in_stock_only; excluded
-- categories only if $include_excluded_categories), ordered by lower-cased name, then
-- categoryId, with its {categoryId, name} JSON. $store_keys is a list of keys (the exporter: a
-- batch of stores), $channel_id null means every channel; $first_position / $last_position
-- (null: no bound) cut each store and channel's page.
with
listing as (select * from marts.listing),
categories as (select * from staging.categories),
found as (
    select distinct store_key, channel_id, category_id
    from listing
    where of_stores($store_keys, listing.store_key, listing.store_hash)
      and ($channel_id is null or listing.channel_id = $channel_id)
      and (listing.quantity > 0 or not $in_stock_only)
      and ($include_excluded_categories or not listing.is_excluded_category)
),
numbered as (
    select
        found.store_key,
        found.channel_id,
        found.category_id,
        categories.name,
        row_number() over (
            partition by found.store_key, found.channel_id
            order by lower(categories.name), found.category_id
        ) as position,
        count(*) over (partition by found.store_key, found.channel_id) as total_items
    from found
    join categories on categories.category_id = found.category_id
),
final as (
    select
        store_key,
        channel_id,
        position::bigint as position,
        total_items::bigint as total_items,
        concat('{"categoryId":', category_id, ',"name":', json_text(name), '}') as result_json
    from numbered
    where ($first_position is null or position >= $first_position)
      and ($last_position is null or position <= $last_position)
)
select * from final order by store_key, channel_id, position
