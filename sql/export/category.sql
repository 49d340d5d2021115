-- One row per category: its Category JSON object (spec 2.6) for the category listing, keys in
-- the spec's order, modifiedOn as the live service writes it (json_time), nulls written as
-- null. The live service's categoryDescription, categoryPageTitle (after seoCategoryName) and
-- isDirect (last) are keys of every category when the input carries their column, absent
-- otherwise (docs/contract.md §6).
-- @column category_id: Category identifier
-- @column category_json: The Category object
with
categories as (select * from staging.categories),
given as (select column_name from meta.input_columns where table_name = 'categories'),
keyed as (
    select
        bool_or(column_name = 'categoryDescription') as description,
        bool_or(column_name = 'categoryPageTitle') as page_title,
        bool_or(column_name = 'isDirect') as is_direct
    from given
),
final as (
    select
        categories.category_id,
        concat(
            '{"categoryId":', categories.category_id,
            ',"name":', json_text(categories.name),
            ',"modifiedOn":', json_time(categories.modified_on),
            ',"displayName":', json_text(categories.display_name),
            ',"seoCategoryName":', json_text(categories.seo_category_name),
            case when keyed.description
                then concat(',"categoryDescription":', json_text(categories.category_description))
            end,
            case when keyed.page_title
                then concat(',"categoryPageTitle":', json_text(categories.category_page_title))
            end,
            ',"sealedLabel":', json_text(categories.sealed_label),
            ',"nonSealedLabel":', json_text(categories.non_sealed_label),
            ',"conditionGuideUrl":', json_text(categories.condition_guide_url),
            ',"isScannable":', json_bool(categories.is_scannable),
            ',"popularity":', coalesce(categories.popularity::varchar, 'null'),
            case when keyed.is_direct then concat(',"isDirect":', json_bool(categories.is_direct)) end,
            '}'
        ) as category_json
    from categories
    cross join keyed
)
select * from final order by category_id
