-- GET /v1.39.0/stores/{storeKey}/inventory/products (Stores_GetStoreInventory),
-- docs/contract.md §4.
-- One row per (store, channel, product) of the answer, in the requested order, with the
-- product's StoreProduct JSON and the keys the page was cut by. Not a table: run with bind
-- parameters for one request ($store_keys a list of one key), or by the exporter for a batch
-- of stores ($store_keys) and $channel_id null, which means every channel. $store_keys null
-- means every store. $sort_field is 'price', 'name' or 'relevance' (a search's), $sort_desc a
-- boolean; ties break on productId ascending. $first_position / $last_position (1-based,
-- inclusive, null for no bound) cut the page of a request for one store and channel.
-- `pipeline serve` keeps a store's whole answer for a channel and the listing flags (every
-- product, excluded categories too, no filter or bound) and cuts other pages from it by the
-- same `store_inventory_page`.
with
listing as (select * from marts.listing),
-- Read where used, not materialised whole: each use then scans only the products it joins.
product_fixed as not materialized (select * from export.product),
sku_body as (select * from export.sku_body),
-- Read again where used: copying a large store's rows costs more than scanning them twice.
-- Excluded categories are the page's to drop (a product's category is excluded or not).
matching as not materialized (
    select listing.*
    from listing
    where of_stores($store_keys, listing.store_key, listing.store_hash)
      and ($channel_id is null or listing.channel_id = $channel_id)
      and listing.quantity > 0
      and shown(listing.is_custom, false, $include_generic, $include_custom, true)
),
product as (
    -- All entries count and price the product: plain aggregates, no text yet.
    select
        store_key,
        channel_id,
        product_id,
        any_value(category_id) as category_id,
        any_value(group_id) as group_id,
        bool_or(is_excluded_category) as is_excluded_category,
        count(*) as sku_count,
        min(price) as lowest_price
    from matching
    group by store_key, channel_id, product_id
),
named as (
    select
        product.*,
        product_fixed.name_key,
        product_fixed.category_name_key,
        product_fixed.group_name_key,
        product_fixed.number_key,
        product_fixed.rarity_key
    from product
    join product_fixed using (product_id)
),
-- @include api/parts/store_inventory_page
entry as (
    -- The Sku JSON of the page's products' entries only (the page is cut first), with the
    -- body of its (condition, language, printing).
    select
        matching.store_key,
        matching.channel_id,
        matching.product_id,
        sku_order(price, sku_id, is_custom, store_price_custom_id) as sku_key,
        json_sku_entry(
            sku_id, is_custom, store_price_custom_id, sku_body.body_json, price,
            quantity, is_featured, title, description, main_image_url, additional_image_urls
        ) as entry_json
    from matching
    semi join page using (store_key, channel_id, product_id)
    join sku_body using (condition_id, language_id, printing_id)
),
skus as (
    -- The product keeps the first $sku_limit entries in the SKU order: sorted as a plain list
    -- (list_sort), which is cheaper than a window or an ordered aggregate.
    select
        store_key,
        channel_id,
        product_id,
        array_to_string(
            list_transform(
                list_slice(list_sort(list({'key': sku_key, 'json': entry_json})), 1, $sku_limit),
                lambda entry: entry.json
            ),
            ','
        ) as skus_json
    from entry
    group by store_key, channel_id, product_id
),
final as (
    select
        page.store_key,
        page.channel_id,
        page.product_id,
        page.category_id,
        page.group_id,
        page.is_excluded_category,
        page.lowest_price,
        page.name_key,
        page.category_name_key,
        page.group_name_key,
        page.number_key,
        page.rarity_key,
        page.total_items::bigint as total_items,
        concat(
            product_fixed.head_json,
            ',"skuCount":', page.sku_count,
            ',"lowestPrice":', json_money(page.lowest_price),
            ',"skus":[', skus.skus_json, ']}'
        ) as product_json,
        page.price_up,
        page.price_down,
        page.rank_up,
        page.name_up,
        page.name_down
    from page
    join skus using (store_key, channel_id, product_id)
    join product_fixed using (product_id)
)
select * exclude (price_up, price_down, rank_up, name_up, name_down)
from final
order by
    store_key, channel_id, price_up asc, price_down desc, rank_up asc, name_up asc, name_down desc,
    product_id
