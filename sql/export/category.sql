-- One row per category: its Category JSON object (spec 2.6) for the category listing, keys in
-- the spec's order, modifiedOn with exactly three fraction digits, nulls written as null.
-- @column category_id: Category identifier
-- @column category_json: The Category object
with
categories as (select * from staging.categories),
final as (
    select
        category_id,
        concat(
            '{"categoryId":', category_id,
            ',"name":', json_text(name),
            ',"modifiedOn":', json_text(strftime(modified_on, '%Y-%m-%dT%H:%M:%S.%g')),
            ',"displayName":', json_text(display_name),
            ',"seoCategoryName":', json_text(seo_category_name),
            ',"sealedLabel":', json_text(sealed_label),
            ',"nonSealedLabel":', json_text(non_sealed_label),
            ',"conditionGuideUrl":', json_text(condition_guide_url),
            ',"isScannable":', json_bool(is_scannable),
            ',"popularity":', coalesce(popularity::varchar, 'null'),
            '}'
        ) as category_json
    from categories
)
select * from final order by category_id
