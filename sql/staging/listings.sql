-- One row per listing row that passed the contract checks. Defaults applied: channelId 0,
-- isCustom false. Prices are exact decimals.
-- @column store_key: Store key, lower-case
-- @column channel_id: Sales channel (0: the default marketplace channel)
-- @column sku_id: Listed SKU
-- @column price: Price, exact, two decimals
-- @column quantity: Quantity for sale (0: listed but not for sale)
-- @column is_featured: Featured flag (may be null)
-- @column is_custom: Whether this is a custom listing
-- @column store_price_custom_id: Custom listing identifier (custom listings only)
-- @column title: Custom listing title
-- @column description: Custom listing description
-- @column main_image_url: Custom listing main image URL
-- @column additional_image_urls: Custom listing further image URLs
-- @column source_file: Input file of the row, relative to the input directory
-- @column source_row: Data record number in that file, from 1
with
-- Casts are try_cast: the row checks have already rejected every value that does not
-- parse, and DuckDB may evaluate a cast before the anti-join has removed those rows.
-- valid_listings: the rows of raw.listings without a row-level reject (made by the runner)
valid as (select * from valid_listings),
final as (
    select
        cast(lower("storeKey") as varchar) as store_key,
        try_cast(trim(coalesce(cell("channelId"), '0')) as integer) as channel_id,
        try_cast(trim("skuId") as bigint) as sku_id,
        try_cast(trim("price") as decimal(18, 2)) as price,
        try_cast(trim("quantity") as integer) as quantity,
        as_bool("isFeatured") as is_featured,
        coalesce(as_bool("isCustom"), false) as is_custom,
        try_cast(trim(cell("storePriceCustomId")) as bigint) as store_price_custom_id,
        cast(cell("title") as varchar) as title,
        cast(cell("description") as varchar) as description,
        cast(cell("mainImageUrl") as varchar) as main_image_url,
        cast(from_json(cell("additionalImageUrls"), '["VARCHAR"]') as varchar[])
            as additional_image_urls,
        _source_file as source_file,
        _source_row as source_row
    from valid
)
select * from final
