-- GET /v1.39.0/stores/{storeKey}/inventory/products (Stores_GetStoreInventory),
-- docs/contract.md §4.
-- One row per (store, channel, product) of the answer, in the requested order, with the
-- product's StoreProduct JSON. Not a table: run with bind parameters for one request
-- ($store_keys a list of one key), or by the exporter for a batch of stores ($store_keys) and
-- $channel_id null, which means every channel. $store_keys null means every store.
-- $sort_field is 'price' or 'name', $sort_desc a boolean; ties break on productId ascending.
-- $first_position / $last_position (1-based, inclusive, null for no bound) cut the page.
with
listing as (select * from marts.listing),
-- Read where used, not materialised whole: each use then scans only the products it joins.
product_fixed as not materialized (select * from export.product),
sku_fixed as (select * from export.sku),
matching as (
    select listing.*
    from listing
    join product_fixed using (product_id)
    where of_stores($store_keys, listing.store_key, listing.store_hash)
      and ($channel_id is null or listing.channel_id = $channel_id)
      and listing.quantity > 0
      and shown(
          listing.is_custom, listing.is_excluded_category,
          $include_generic, $include_custom, $include_excluded_categories)
      and ($category_id is null or listing.category_id = $category_id)
      and ($category_name is null or product_fixed.category_name_key = lower($category_name))
      and ($group_id is null or listing.group_id = $group_id)
      and ($group_name is null or product_fixed.group_name_key = lower($group_name))
      and ($product_name is null or contains(product_fixed.name_key, lower($product_name)))
),
shown as (
    -- Every entry's Sku JSON; the product keeps the first $sku_limit in the SKU order.
    select
        matching.*,
        json_sku_entry(
            matching.sku_id, is_custom, store_price_custom_id, sku_fixed.body_json, price,
            quantity, is_featured, title, description, main_image_url, additional_image_urls
        ) as entry_json
    from matching
    join sku_fixed on sku_fixed.sku_id = matching.sku_id
),
product as (
    -- All entries count and price the product. The entries are sorted within the product in
    -- the SKU order (sku_order) as a plain list, then list_sort, which is cheaper than a window
    -- or an ordered aggregate.
    select
        store_key,
        channel_id,
        product_id,
        any_value(category_id) as category_id,
        any_value(group_id) as group_id,
        count(*) as sku_count,
        min(price) as lowest_price,
        array_to_string(
            list_transform(
                list_slice(
                    list_sort(list({
                        'key': sku_order(price, sku_id, is_custom, store_price_custom_id),
                        'json': entry_json
                    })),
                    1,
                    $sku_limit
                ),
                lambda entry: entry.json
            ),
            ','
        ) as skus_json
    from shown
    group by store_key, channel_id, product_id
),
ranked as (
    -- The answer's order within a store and channel, as sort columns (null but for the
    -- requested sort), then productId. The exporter cuts the categoryId and groupId pages from
    -- it: a filter on a category or group keeps the other products' order.
    select
        product.*,
        product_fixed.head_json,
        case when $sort_field = 'price' and not $sort_desc then lowest_price end as price_up,
        case when $sort_field = 'price' and $sort_desc then lowest_price end as price_down,
        case when $sort_field = 'name' and not $sort_desc then product_fixed.name_key end
            as name_up,
        case when $sort_field = 'name' and $sort_desc then product_fixed.name_key end as name_down
    from product
    join product_fixed using (product_id)
),
numbered as (
    -- Positions and totals, for a cut page. The final order is the same, written on the sort
    -- columns: a query that reads neither position nor total_items (the exporter) runs no
    -- window at all.
    select
        ranked.*,
        row_number() over (
            partition by store_key, channel_id
            order by price_up asc, price_down desc, name_up asc, name_down desc, product_id
        ) as position,
        count(*) over (partition by store_key, channel_id) as total_items
    from ranked
),
final as (
    select
        store_key,
        channel_id,
        product_id,
        category_id,
        group_id,
        position::bigint as position,
        total_items::bigint as total_items,
        concat(
            head_json,
            ',"skuCount":', sku_count,
            ',"lowestPrice":', json_money(lowest_price),
            ',"skus":[', skus_json, ']}'
        ) as product_json,
        price_up,
        price_down,
        name_up,
        name_down
    from numbered
    where ($first_position is null or position >= $first_position)
      and ($last_position is null or position <= $last_position)
)
select * exclude (price_up, price_down, name_up, name_down)
from final
order by
    store_key, channel_id, price_up asc, price_down desc, name_up asc, name_down desc, product_id
