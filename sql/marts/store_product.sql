-- One row per store × channel × product with at least one listing for sale (quantity > 0),
-- generic and custom together: the default view of the inventory API, for analysts.
-- @column store_key: Store key, lower-case
-- @column channel_id: Sales channel
-- @column product_id: Product identifier
-- @column category_id: Category of the product
-- @column group_id: Group of the product
-- @column is_excluded_category: Whether the store excludes the category on this channel (such products are hidden by default)
-- @column sku_count: Listings for sale of the product (each custom listing counts on its own)
-- @column custom_count: Of which custom listings
-- @column lowest_price: Lowest price among them
-- @column highest_price: Highest price among them
-- @column total_quantity: Sum of their quantities
with
listings as (select * from marts.listing where quantity > 0),
final as (
    select
        store_key,
        channel_id,
        product_id,
        any_value(category_id) as category_id,
        any_value(group_id) as group_id,
        bool_or(is_excluded_category) as is_excluded_category,
        count(*)::bigint as sku_count,
        count(*) filter (where is_custom)::bigint as custom_count,
        min(price) as lowest_price,
        max(price) as highest_price,
        sum(quantity)::bigint as total_quantity
    from listings
    group by store_key, channel_id, product_id
)
select * from final order by store_key, channel_id, product_id
