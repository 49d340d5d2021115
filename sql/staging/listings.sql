-- One row per listing row that passed the contract checks. Defaults applied: channelId 0,
-- isCustom false. Prices are exact decimals.
with
-- valid_listings (made by the runner): the rows of raw.listings without a row-level reject,
-- every declared column parsed to its contract type, defaults applied (`rules.parsed`)
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
