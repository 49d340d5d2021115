-- One row per catalog SKU: what it costs on the marketplace tonight, from every store's market
-- listings (channel 0, quantity > 0, generic and custom, not of a category the store excludes
-- on channel 0). A SKU with no market listing has null prices and zero counts.
-- @column sku_id: SKU identifier
-- @column product_id: Product of the SKU
-- @column group_id: Group of the product
-- @column category_id: Category of the product
-- @column printing_id: Printing of the SKU
-- @column low_price: Lowest market listing price (null: not listed)
-- @column high_price: Highest market listing price (null: not listed)
-- @column listing_count: Market listings of the SKU (each counted once, whatever its quantity)
-- @column store_count: Stores with a market listing of the SKU
-- @column quantity: Quantity for sale over those listings
with
skus as (select * from marts.sku),
listings as (select * from marts.listing),
market as (
    select * from listings
    where channel_id = 0 and quantity > 0 and not is_excluded_category
),
figures as (
    select
        sku_id,
        min(price) as low_price,
        max(price) as high_price,
        count(*) as listing_count,
        count(distinct store_key) as store_count,
        sum(quantity) as quantity
    from market
    group by sku_id
),
final as (
    select
        skus.sku_id,
        skus.product_id,
        skus.group_id,
        skus.category_id,
        skus.printing_id,
        figures.low_price::decimal(18, 2) as low_price,
        figures.high_price::decimal(18, 2) as high_price,
        coalesce(figures.listing_count, 0)::bigint as listing_count,
        coalesce(figures.store_count, 0)::bigint as store_count,
        coalesce(figures.quantity, 0)::bigint as quantity
    from skus
    left join figures using (sku_id)
)
select * from final order by sku_id
