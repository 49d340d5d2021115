-- GET /v1.39.0/stores/{storeKey}/inventory/products/{productId}/skus
-- (Stores_GetStoreProductSkus), docs/contract.md §5.1: one row per matching entry of the
-- product, in the SKU order (sku_order, §4.2), with its Sku JSON written as the summary writes
-- it. Bind parameters: $store_keys (a list of one key), $channel_id, $product_id, the listing
-- flags, and $first_position / $last_position (1-based, inclusive) for the page.
with
listing as (select * from marts.listing),
sku_body as (select * from export.sku_body),
matching as (
    select listing.*
    from listing
    where of_stores($store_keys, listing.store_key, listing.store_hash)
      and listing.channel_id = $channel_id
      and listing.product_id = $product_id
      and listing.quantity > 0
      and shown(
          listing.is_custom, listing.is_excluded_category,
          $include_generic, $include_custom, $include_excluded_categories)
),
numbered as (
    select
        matching.*,
        sku_body.body_json,
        row_number() over (
            order by sku_order(price, sku_id, is_custom, store_price_custom_id)
        ) as position,
        count(*) over () as total_items
    from matching
    join sku_body using (condition_id, language_id, printing_id)
),
final as (
    select
        position::bigint as position,
        total_items::bigint as total_items,
        json_sku_entry(
            sku_id, is_custom, store_price_custom_id, body_json, price, quantity, is_featured,
            title, description, main_image_url, additional_image_urls
        ) as result_json
    from numbered
    where position between $first_position and $last_position
)
select * from final order by position
