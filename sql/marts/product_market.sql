-- One row per catalog product x printing of its SKUs (listed or not): low, mid and high price
-- of every store's market listings of the product's SKUs of that printing (the listings of
-- marts.sku_market). mid_price is the median with each listing counted once, the lower of the
-- two middle prices for an even count (quantile_disc), so always a listed price.
-- @column product_id: Product identifier
-- @column printing_id: Printing of the SKUs (may have no printing row)
-- @column group_id: Group of the product
-- @column category_id: Category of the product
-- @column printing_name: The printing's name, the answer's subTypeName (null: no printing row)
-- @column low_price: Lowest market listing price (null: nothing listed)
-- @column mid_price: Median market listing price, the lower middle one for an even count
-- @column high_price: Highest market listing price (null: nothing listed)
-- @column sku_count: The product's SKUs of this printing
-- @column listing_count: Market listings behind the prices
-- @column store_count: Stores with a market listing of these SKUs
-- @column quantity: Quantity for sale over those listings
with
skus as (select * from marts.sku),
listings as (select * from marts.listing),
market as (
    select product_id, printing_id, store_key, price, quantity from listings
    where channel_id = 0 and quantity > 0 and not is_excluded_category
),
figures as (
    select
        product_id,
        printing_id,
        min(price) as low_price,
        quantile_disc(price, 0.5) as mid_price,
        max(price) as high_price,
        count(*) as listing_count,
        count(distinct store_key) as store_count,
        sum(quantity) as quantity
    from market
    group by product_id, printing_id
),
pairs as (
    select
        product_id,
        printing_id,
        any_value(group_id) as group_id,
        any_value(category_id) as category_id,
        any_value(printing_name) as printing_name,
        count(*) as sku_count
    from skus
    group by product_id, printing_id
),
final as (
    select
        pairs.product_id,
        pairs.printing_id,
        pairs.group_id,
        pairs.category_id,
        pairs.printing_name,
        figures.low_price::decimal(18, 2) as low_price,
        figures.mid_price::decimal(18, 2) as mid_price,
        figures.high_price::decimal(18, 2) as high_price,
        pairs.sku_count::bigint as sku_count,
        coalesce(figures.listing_count, 0)::bigint as listing_count,
        coalesce(figures.store_count, 0)::bigint as store_count,
        coalesce(figures.quantity, 0)::bigint as quantity
    from pairs
    left join figures using (product_id, printing_id)
)
select * from final order by group_id, product_id, printing_id
