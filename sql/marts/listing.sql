-- One row per accepted listing (store × channel × listing), joined with its SKU's catalog
-- facts and whether the store excludes the product's category on that channel. This is the
-- fact table every request of the inventory API reads. Its rows are clustered by store_hash
-- (each store's rows together, as the key's order would, with a number for DuckDB's zone maps,
-- which keep only 8 bytes of a text column's bounds: keys like `store-00001` share them), so
-- a request for one store reads the row group or two that hold it (`pipeline serve`).
-- @column store_key: Store key, lower-case
-- @column channel_id: Sales channel
-- @column sku_id: Listed SKU
-- @column is_custom: Whether this is a custom listing
-- @column store_price_custom_id: Custom listing identifier (custom listings only)
-- @column price: Price, exact
-- @column quantity: Quantity for sale
-- @column is_featured: Featured flag (may be null)
-- @column title: Custom listing title
-- @column description: Custom listing description
-- @column main_image_url: Custom listing main image URL
-- @column additional_image_urls: Custom listing further image URLs
-- @column product_id: Product of the SKU
-- @column category_id: Category of the product
-- @column group_id: Group of the product
-- @column condition_id: Condition of the SKU (with language_id and printing_id, the key of its Sku body, export.sku_body)
-- @column language_id: Language of the SKU
-- @column printing_id: Printing of the SKU
-- @column is_excluded_category: Whether the store excludes the product's category on this channel
-- @column store_hash: hash(store_key), the table's clustering key: the rows of a store lie together
with
listings as (select * from staging.listings),
skus as (select * from marts.sku),
exclusions as (select distinct store_key, channel_id, category_id from staging.excluded_categories),
final as (
    select
        listings.store_key,
        listings.channel_id,
        listings.sku_id,
        listings.is_custom,
        listings.store_price_custom_id,
        listings.price,
        listings.quantity,
        listings.is_featured,
        listings.title,
        listings.description,
        listings.main_image_url,
        listings.additional_image_urls,
        skus.product_id,
        skus.category_id,
        skus.group_id,
        skus.condition_id,
        skus.language_id,
        skus.printing_id,
        exclusions.category_id is not null as is_excluded_category,
        hash(listings.store_key)::ubigint as store_hash
    from listings
    join skus on skus.sku_id = listings.sku_id
    left join exclusions
        on exclusions.store_key = listings.store_key
        and exclusions.channel_id = listings.channel_id
        and exclusions.category_id = skus.category_id
)
select * from final
order by store_hash, store_key, channel_id, product_id, sku_id, is_custom, store_price_custom_id
