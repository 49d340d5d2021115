-- GET /v1.39.0/catalog/categories/{categoryId}/languages (Catalog_GetCategoryLanguages),
-- docs/contract.md §7. One row per language (with a row in languages) of the SKUs of category
-- $item_id's products, by languageId.
with
skus as (select * from marts.sku),
languages as (select * from staging.languages),
used as (select distinct language_id from skus where category_id = $item_id),
final as (
    select
        (row_number() over (order by languages.language_id))::bigint as position,
        (count(*) over ())::bigint as total_items,
        languages.language_id::bigint as item_id,
        concat(
            '{"languageId":', languages.language_id,
            ',"name":', json_text(languages.name),
            ',"abbr":', json_text(languages.abbr), '}'
        ) as result_json
    from languages
    join used using (language_id)
)
select * from final order by position
