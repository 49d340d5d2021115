-- One row per catalog product: the fixed opening of its StoreProduct JSON object (spec 2.2,
-- keys in the spec's order up to `number`), built once and shared by every store's pages.
-- @column product_id: Product identifier
-- @column name_key: Lower-cased product name: the key of `sort=name` and of the productName filter
-- @column category_name_key: Lower-cased category name (the categoryName filter)
-- @column group_name_key: Lower-cased group name (the groupName filter)
-- @column number_key: Lower-cased number (the search's Number filter)
-- @column rarity_key: Lower-cased rarity (the search's Rarity filter)
-- @column head_json: '{"productId":..,"name":..,"category":..,"group":..,"rarity":..,"number":..'
with
products as (select * from staging.products),
categories as (select * from staging.categories),
groups as (select * from staging.groups),
final as (
    select
        products.product_id,
        lower(products.name) as name_key,
        lower(categories.name) as category_name_key,
        lower(groups.name) as group_name_key,
        lower(products.number) as number_key,
        lower(products.rarity) as rarity_key,
        concat(
            '{"productId":', products.product_id,
            ',"name":', json_text(products.name),
            ',"category":', json_text(categories.name),
            ',"group":', json_text(groups.name),
            ',"rarity":', json_text(products.rarity),
            ',"number":', json_text(products.number)
        ) as head_json
    from products
    join categories on categories.category_id = products.category_id
    join groups on groups.group_id = products.group_id
)
select * from final order by product_id
