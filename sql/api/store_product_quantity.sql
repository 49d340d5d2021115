-- GET /v1.39.0/stores/{storeKey}/inventory/products/{productId}/quantity
-- (Stores_GetInventoryProductQuantity), docs/contract.md §5.2: one row, the product's
-- {productId, totalQuantity, skus} over its matching entries in the SKU order (§4.2, none when
-- nothing matches). An entry is {skuId, quantity, isCustom}; a custom one also carries
-- storePriceCustomId (after skuId) and the custom keys. Bind parameters: $store_keys (a list of
-- one key), $channel_id, $product_id and the listing flags.
with
-- @include api/parts/store_product_entries
final as (
    select
        1::bigint as position,
        1::bigint as total_items,
        concat(
            '{"productId":', $product_id::bigint,
            ',"totalQuantity":', sum(quantity),
            ',"skus":[',
            string_agg(
                quantity_json, ','
                order by sku_order(price, sku_id, is_custom, store_price_custom_id)
            ),
            ']}'
        ) as result_json
    from entries
    having count(*) > 0
)
select * from final
