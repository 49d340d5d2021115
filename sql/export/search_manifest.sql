-- One row per category with a row: its search manifest (docs/contract.md §12), built once a
-- build; GET /v1.39.0/catalog/categories/{categoryId}/search/manifest answers it, as a page
-- and live (`api/catalog_search_manifest.sql`). SetName offers each distinct lower-cased name
-- of the category's groups, Rarity each distinct rarity of its products (compared
-- lower-cased), each spelled as its smallest spelling in code-point order and ordered by the
-- lower-cased value.
-- @column category_id: Category identifier
-- @column manifest_json: The manifest '{"sorting":[..],"filters":[..]}': the sorts, then the filters ProductName, SetName, Number and Rarity
with
categories as (select category_id from staging.categories),
groups as (select category_id, name from staging.groups),
products as (select category_id, rarity from staging.products),
set_names as (
    select category_id, lower(name) as value_key, min(name) as value
    from groups
    group by category_id, lower(name)
),
rarities as (
    select category_id, lower(rarity) as value_key, min(rarity) as value
    from products
    where rarity is not null
    group by category_id, lower(rarity)
),
set_items as (
    select
        category_id,
        string_agg(
            concat('{"text":', json_text(value), ',"value":', json_text(value), '}'),
            ',' order by value_key
        ) as items_json
    from set_names
    group by category_id
),
rarity_items as (
    select
        category_id,
        string_agg(
            concat('{"text":', json_text(value), ',"value":', json_text(value), '}'),
            ',' order by value_key
        ) as items_json
    from rarities
    group by category_id
),
final as (
    select
        categories.category_id,
        concat(
            '{"sorting":[',
            '{"text":"A-Z","value":"ProductName ASC"},',
            '{"text":"Price: High to Low","value":"MinPrice DESC"},',
            '{"text":"Price: Low to High","value":"MinPrice ASC"},',
            '{"text":"Relevance","value":"Relevance"}',
            '],"filters":[',
            '{"name":"ProductName","displayName":"Product Name","inputType":"Text","items":[]},',
            '{"name":"SetName","displayName":"Set","inputType":"SingleValue","items":[',
            '{"text":"All Sets","value":"All"}', coalesce(',' || set_items.items_json, ''), ']},',
            '{"name":"Number","displayName":"Number","inputType":"Text","items":[]},',
            '{"name":"Rarity","displayName":"Rarity","inputType":"MultipleValues","items":[',
            coalesce(rarity_items.items_json, ''), ']}]}'
        ) as manifest_json
    from categories
    left join set_items using (category_id)
    left join rarity_items using (category_id)
)
select * from final order by category_id
