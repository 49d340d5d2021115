-- GET /v1.39.0/stores/{storeKey}/inventory/groups (Stores_GetStoreGroups), docs/contract.md
-- §5.4: one row per (store, channel, group) of the store's matching products (as the store's
-- categories: generic and custom listings, quantity > 0 unless not $in_stock_only, excluded
-- categories only if $include_excluded_categories), filtered by $category_id and
-- $category_name (lower-cased, exact; null: no filter), ordered by lower-cased name, then
-- groupId, with its Group JSON (export.catalog_group, the catalog's: fields the input lacks
-- are null; times as json_time writes them). $store_keys is a list of keys, $channel_id null means every channel; $first_position /
-- $last_position (null: no bound) cut each store and channel's page.
with
listing as (select * from marts.listing),
groups as (select * from export.catalog_group),
categories as (select * from staging.categories),
found as (
    select distinct store_key, channel_id, group_id
    from listing
    join categories on categories.category_id = listing.category_id
    where of_stores($store_keys, listing.store_key, listing.store_hash)
      and ($channel_id is null or listing.channel_id = $channel_id)
      and (listing.quantity > 0 or not $in_stock_only)
      and ($include_excluded_categories or not listing.is_excluded_category)
      and ($category_id is null or listing.category_id = $category_id)
      and ($category_name is null or lower(categories.name) = lower($category_name))
),
numbered as (
    select
        found.store_key,
        found.channel_id,
        groups.group_json,
        row_number() over (
            partition by found.store_key, found.channel_id
            order by groups.name_key, groups.group_id
        ) as position,
        count(*) over (partition by found.store_key, found.channel_id) as total_items
    from found
    join groups on groups.group_id = found.group_id
),
final as (
    select
        store_key,
        channel_id,
        position::bigint as position,
        total_items::bigint as total_items,
        group_json as result_json
    from numbered
    where ($first_position is null or position >= $first_position)
      and ($last_position is null or position <= $last_position)
)
select * from final order by store_key, channel_id, position
