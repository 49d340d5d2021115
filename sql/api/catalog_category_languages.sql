-- GET /v1.39.0/catalog/categories/{categoryId}/languages (Catalog_GetCategoryLanguages),
-- docs/contract.md §7. One row per language (with a row in languages) of the SKUs of category
-- $item_id's products (null: of every category, for the exporter), by languageId.
with
skus as (select * from marts.sku),
languages as (select * from staging.languages),
used as (
    select distinct category_id, language_id from skus
    where $item_id is null or category_id = $item_id
),
final as (
    select
        used.category_id::bigint as path_id,
        (row_number() over (
            partition by used.category_id order by languages.language_id
        ))::bigint as position,
        (count(*) over (partition by used.category_id))::bigint as total_items,
        languages.language_id::bigint as item_id,
        concat(
            '{"languageId":', languages.language_id,
            ',"name":', json_text(languages.name),
            ',"abbr":', json_text(languages.abbr), '}'
        ) as result_json
    from used
    join languages using (language_id)
)
select * from final order by path_id, position
