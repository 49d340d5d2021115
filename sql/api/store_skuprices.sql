-- GET /v1.39.0/stores/{storeKey}/inventory/skuprices (Stores_GetInventorySkuPrices),
-- docs/contract.md §5.3: the store's price list on the channel, one row per listing whatever
-- its quantity, ordered by skuId, generic before custom, then storePriceCustomId.
-- skuListPriceId is the listing's key as text ("<skuId>", or "<skuId>-<storePriceCustomId>"
-- for a custom listing). Bind parameters: $store_keys (a list of one key), $channel_id, the
-- listing flags, $group_id and $sku_id (null: no filter), and $first_position /
-- $last_position for the page.
with
listing as (select * from marts.listing),
matching as (
    select listing.*
    from listing
    where of_stores($store_keys, listing.store_key, listing.store_hash)
      and listing.channel_id = $channel_id
      and shown(
          listing.is_custom, listing.is_excluded_category,
          $include_generic, $include_custom, $include_excluded_categories)
      and ($group_id is null or listing.group_id = $group_id)
      and ($sku_id is null or listing.sku_id = $sku_id)
),
page as (
    -- The page: a top-N of the store's listings in the list's order, not a sort of them all.
    select *
    from matching
    order by sku_id, is_custom, store_price_custom_id
    limit $last_position - $first_position + 1
    offset $first_position - 1
),
final as (
    select
        ($first_position - 1 + row_number() over (
            order by sku_id, is_custom, store_price_custom_id
        ))::bigint as position,
        (select count(*) from matching)::bigint as total_items,
        json_listing_entry(
            concat(
                '"skuListPriceId":',
                json_text(
                    case when is_custom then concat(sku_id, '-', store_price_custom_id)
                    else sku_id::varchar end
                ),
                ','
            ),
            sku_id, is_custom, store_price_custom_id, concat(',"price":', json_money(price)),
            title, description, main_image_url, additional_image_urls
        ) as result_json
    from page
)
select * from final order by position
