-- One row per category that passed the contract checks (grain: categoryId).
with
-- valid_categories (made by the runner): the rows of raw.categories without a row-level reject,
-- every declared column parsed to its contract type, defaults applied (`rules.parsed`)
valid as (select * from valid_categories),
final as (
    select
        "categoryId" as category_id,
        "name" as name,
        "displayName" as display_name,
        "modifiedOn" as modified_on,
        "seoCategoryName" as seo_category_name,
        "categoryDescription" as category_description,
        "categoryPageTitle" as category_page_title,
        "sealedLabel" as sealed_label,
        "nonSealedLabel" as non_sealed_label,
        "conditionGuideUrl" as condition_guide_url,
        "isScannable" as is_scannable,
        "popularity" as popularity,
        "isDirect" as is_direct,
        _source_file as source_file,
        _source_row as source_row
    from valid
)
select * from final
