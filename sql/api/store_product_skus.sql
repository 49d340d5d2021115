-- GET /v1.39.0/stores/{storeKey}/inventory/products/{productId}/skus
-- (Stores_GetStoreProductSkus), docs/contract.md §5.1: one row per matching entry of the
-- product, in the SKU order (sku_order, §4.2), with its Sku JSON written as the summary writes
-- it. Bind parameters: $store_keys (a list of one key), $channel_id, $product_id, the listing
-- flags, and $first_position / $last_position (1-based, inclusive) for the page.
with
-- @include api/parts/store_product_entries
numbered as (
    select
        entries.*,
        row_number() over (
            order by sku_order(price, sku_id, is_custom, store_price_custom_id)
        ) as position,
        count(*) over () as total_items
    from entries
),
final as (
    select
        position::bigint as position,
        total_items::bigint as total_items,
        sku_json as result_json
    from numbered
    where position between $first_position and $last_position
)
select * from final order by position
