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
-- valid_listings (made by the runner): the rows of raw.listings without a row-level reject,
-- every declared column parsed to its contract type, defaults applied (`checks.parsed`)
valid as (select * from valid_listings),
final as (
    select
        lower("storeKey") as store_key,
        "channelId" as channel_id,
        "skuId" as sku_id,
        "price" as price,
        "quantity" as quantity,
        "isFeatured" as is_featured,
        "isCustom" as is_custom,
        "storePriceCustomId" as store_price_custom_id,
        "title" as title,
        "description" as description,
        "mainImageUrl" as main_image_url,
        "additionalImageUrls" as additional_image_urls,
        _source_file as source_file,
        _source_row as source_row
    from valid
)
select * from final
