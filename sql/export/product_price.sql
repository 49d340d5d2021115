-- One row per catalog product x printing of its SKUs: its market price entry (docs/contract.md
-- §7, pricing/group), from marts.product_market. marketPrice and directLowPrice need sales and a
-- Direct programme, which no input has: always null.
-- @column product_id: Product identifier
-- @column printing_id: Printing of the entry
-- @column group_id: Group of the product
-- @column price_json: '{"productId":..,"lowPrice":..,..,"subTypeName":..}'
with
market as (select * from marts.product_market),
final as (
    select
        product_id,
        printing_id,
        group_id,
        concat(
            '{"productId":', product_id,
            ',"lowPrice":', coalesce(json_money(low_price), 'null'),
            ',"midPrice":', coalesce(json_money(mid_price), 'null'),
            ',"highPrice":', coalesce(json_money(high_price), 'null'),
            ',"marketPrice":null,"directLowPrice":null',
            ',"subTypeName":', json_text(printing_name), '}'
        ) as price_json
    from market
)
select * from final order by group_id, product_id, printing_id
