-- GET /v1.39.0/pricing/sku/{skuIds} (Pricing_GetProductConditionPrices), docs/contract.md §7.
-- One row per catalog SKU of $ids (the answer takes them in the order the ids are first given):
-- lowPrice and lowestListingPrice are its lowest market listing price (null: not listed);
-- lowestShipping, marketPrice and directLowPrice need what no input has: always null.
with
market as (select * from marts.sku_market),
final as (
    select
        null::bigint as path_id,
        sku_id::bigint as position,
        null::bigint as total_items,
        sku_id::bigint as item_id,
        concat(
            '{"skuId":', sku_id,
            ',"lowPrice":', coalesce(json_money(low_price), 'null'),
            ',"lowestShipping":null',
            ',"lowestListingPrice":', coalesce(json_money(low_price), 'null'),
            ',"marketPrice":null,"directLowPrice":null}'
        ) as result_json
    from market
    where sku_id = any($ids::bigint[])
)
select * from final order by position
