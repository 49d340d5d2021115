-- One row per catalog product: the pieces of its catalog Product JSON object (docs/contract.md
-- §7) but its `skus` (staging.skus), built once and shared by the product operations'
-- answers, and its place in the listing's order (by lower-cased name in code-point order, then
-- productId). Its rows lie by category and group, so that a page filtered by either reads
-- their row groups alone.
-- @column product_id: Product identifier
-- @column category_id: Category of the product
-- @column group_id: Group of the product
-- @column name_key: Lower-cased product name (the productName filter)
-- @column category_name_key: Lower-cased category name (the categoryName filter)
-- @column group_name_key: Lower-cased group name (the groupName filter)
-- @column name_rank: The product's place in the listing's order (1-based)
-- @column head_json: '{"productId":..,..,"presaleInfo":..': every key up to presaleInfo, no closing brace
-- @column extended_json: ',"extendedData":[..]': the input's list, or Number and Rarity derived
with
products as (select * from staging.products),
categories as (select * from staging.categories),
groups as (select * from staging.groups),
-- @include api/parts/extended_entries
extended as (
    select
        product_id,
        list_transform(
            entries,
            lambda e: concat(
                '{"name":', json_text(e.name),
                ',"displayName":', json_text(e.display_name),
                ',"value":', json_text(e.value), '}'
            )
        ) as entries
    from extended_entries
),
final as (
    select
        products.product_id,
        products.category_id,
        products.group_id,
        lower(products.name) as name_key,
        lower(categories.name) as category_name_key,
        lower(groups.name) as group_name_key,
        row_number() over (order by lower(products.name), products.product_id) as name_rank,
        concat(
            '{"productId":', products.product_id,
            ',"name":', json_text(products.name),
            ',"cleanName":', json_text(products.clean_name),
            ',"imageUrl":', json_text(products.image_url),
            ',"categoryId":', products.category_id,
            ',"groupId":', products.group_id,
            ',"url":', json_text(products.url),
            ',"modifiedOn":', json_time(products.modified_on),
            ',"imageCount":', coalesce(products.image_count::varchar, 'null'),
            ',"presaleInfo":', case when products.presale_info is null then 'null' else concat(
                '{"isPresale":', json_bool(products.presale_info.is_presale),
                ',"releasedOn":', json_time(products.presale_info.released_on),
                ',"note":', json_text(products.presale_info.note), '}'
            ) end
        ) as head_json,
        concat(',"extendedData":[', array_to_string(extended.entries, ','), ']') as extended_json
    from products
    join categories on categories.category_id = products.category_id
    join groups on groups.group_id = products.group_id
    join extended on extended.product_id = products.product_id
)
select * from final order by category_id, group_id, name_rank
