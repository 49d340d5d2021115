-- A product's matching entries (docs/contract.md §4.1, §5.1, §5.2): the store's listings on the
-- channel that the listing flags show, for sale (quantity > 0), of $product_id (null: every
-- product of the store), each with the parts of its SKU order (sku_order) and its two
-- entries: `sku_json`, the Sku entry as the summary writes it (the skus operation), and
-- `quantity_json` (the quantity operation). Not a query of its own: the CTEs below are
-- included (`-- @include api/parts/store_product_entries`) by store_product_skus and
-- store_product_quantity, and by store_entries, the entries of every product that
-- `pipeline serve` keeps for a store; the queries' kept variants include
-- `kept_product_entries` in its place. They end with a comma.
listing as (select * from marts.listing),
sku_body as (select * from export.sku_body),
entries as (
    select
        listing.product_id,
        listing.price,
        listing.sku_id,
        listing.is_custom,
        listing.store_price_custom_id,
        listing.quantity,
        json_sku_entry(
            listing.sku_id, listing.is_custom, listing.store_price_custom_id, sku_body.body_json,
            listing.price, listing.quantity, listing.is_featured, listing.title,
            listing.description, listing.main_image_url, listing.additional_image_urls
        ) as sku_json,
        json_listing_entry(
            '', listing.sku_id, listing.is_custom, listing.store_price_custom_id,
            concat(',"quantity":', listing.quantity), listing.title, listing.description,
            listing.main_image_url, listing.additional_image_urls
        ) as quantity_json
    from listing
    join sku_body using (condition_id, language_id, printing_id)
    where of_stores($store_keys, listing.store_key, listing.store_hash)
      and listing.channel_id = $channel_id
      and ($product_id is null or listing.product_id = $product_id)
      and listing.quantity > 0
      and shown(
          listing.is_custom, listing.is_excluded_category,
          $include_generic, $include_custom, $include_excluded_categories)
),
