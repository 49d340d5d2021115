-- GET /v1.39.0/pricing/sku/{skuIds} (Pricing_GetProductConditionPrices), docs/contract.md §7.
-- One row per catalog SKU of $ids, in the order first given: lowPrice and lowestListingPrice
-- are its lowest market listing price (null: not listed); lowestShipping, marketPrice and
-- directLowPrice need what no input has: always null.
with
-- @include api/asked_ids
market as (select * from marts.sku_market),
final as (
    select
        null::bigint as path_id,
        asked.position::bigint as position,
        null::bigint as total_items,
        asked.id::bigint as item_id,
        concat(
            '{"skuId":', market.sku_id,
            ',"lowPrice":', coalesce(json_money(market.low_price), 'null'),
            ',"lowestShipping":null',
            ',"lowestListingPrice":', coalesce(json_money(market.low_price), 'null'),
            ',"marketPrice":null,"directLowPrice":null}'
        ) as result_json
    from asked
    join market on market.sku_id = asked.id
)
select * from final order by position
