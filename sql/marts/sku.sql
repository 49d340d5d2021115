-- One row per catalog SKU, joined with its product, category, group, condition, language and
-- printing. Unknown conditions, languages and printings are kept with null names (foil false).
-- @column sku_id: SKU identifier
-- @column product_id: Product identifier
-- @column product_name: Product name
-- @column category_id: Category of the product
-- @column category_name: Category name
-- @column group_id: Group (set) of the product
-- @column group_name: Group name
-- @column rarity: Rarity label (may be null)
-- @column number: Card number (may be null)
-- @column condition_id: Condition identifier (may have no condition row)
-- @column condition_name: Condition name (null for an unknown condition)
-- @column language_id: Language identifier
-- @column language_name: Language name (null for an unknown language)
-- @column language_abbr: Language abbreviation (may be null)
-- @column printing_id: Printing identifier
-- @column printing_name: Printing name (null for an unknown printing)
-- @column foil: Whether the SKU is foil (false for an unknown printing)
with
skus as (select * from staging.skus),
products as (select * from staging.products),
categories as (select * from staging.categories),
groups as (select * from staging.groups),
conditions as (select * from staging.conditions),
languages as (select * from staging.languages),
printings as (select * from staging.printings),
final as (
    select
        skus.sku_id,
        skus.product_id,
        products.name as product_name,
        products.category_id,
        categories.name as category_name,
        products.group_id,
        groups.name as group_name,
        products.rarity,
        products.number,
        skus.condition_id,
        conditions.name as condition_name,
        skus.language_id,
        languages.name as language_name,
        languages.abbr as language_abbr,
        skus.printing_id,
        printings.name as printing_name,
        coalesce(printings.foil, false) as foil
    from skus
    join products on products.product_id = skus.product_id
    join categories on categories.category_id = products.category_id
    join groups on groups.group_id = products.group_id
    left join conditions on conditions.condition_id = skus.condition_id
    left join languages on languages.language_id = skus.language_id
    left join printings on printings.printing_id = skus.printing_id
)
select * from final order by sku_id
