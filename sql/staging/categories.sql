-- One row per category that passed the contract checks (grain: categoryId).
-- @column category_id: Category identifier
-- @column name: Category name
-- @column display_name: Display name
-- @column modified_on: Last modification time, no zone
-- @column seo_category_name: SEO name
-- @column sealed_label: Label for sealed products
-- @column non_sealed_label: Label for singles
-- @column condition_guide_url: URL of the condition guide
-- @column is_scannable: Whether cards of this category can be scanned
-- @column popularity: Popularity value
-- @column source_file: Input file of the row, relative to the input directory
-- @column source_row: Data record number in that file, from 1
with
-- valid_categories (made by the runner): the rows of raw.categories without a row-level reject,
-- every declared column parsed to its contract type, defaults applied (`checks.parsed`)
valid as (select * from valid_categories),
final as (
    select
        "categoryId" as category_id,
        "name" as name,
        "displayName" as display_name,
        "modifiedOn" as modified_on,
        "seoCategoryName" as seo_category_name,
        "sealedLabel" as sealed_label,
        "nonSealedLabel" as non_sealed_label,
        "conditionGuideUrl" as condition_guide_url,
        "isScannable" as is_scannable,
        "popularity" as popularity,
        _source_file as source_file,
        _source_row as source_row
    from valid
)
select * from final
