-- One row per product that passed the contract checks (grain: productId).
with
-- valid_products (made by the runner): the rows of raw.products without a row-level reject,
-- every declared column parsed to its contract type, defaults applied (`rules.parsed`)
valid as (select * from valid_products),
final as (
    select
        "productId" as product_id,
        "categoryId" as category_id,
        "groupId" as group_id,
        "name" as name,
        "rarity" as rarity,
        "number" as number,
        "cleanName" as clean_name,
        "imageUrl" as image_url,
        "url" as url,
        "modifiedOn" as modified_on,
        "imageCount" as image_count,
        -- the input's objects as given: presaleInfo's three keys, every extendedData entry in
        -- order, each value as text
        "presaleInfo" as presale_info,
        "extendedData" as extended_data,
        _source_file as source_file,
        _source_row as source_row
    from valid
)
select * from final
