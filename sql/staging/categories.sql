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
-- Casts are try_cast: the row checks have already rejected every value that does not
-- parse, and DuckDB may evaluate a cast before the anti-join has removed those rows.
-- valid_categories: the rows of raw.categories without a row-level reject (made by the runner)
valid as (select * from valid_categories),
final as (
    select
        try_cast(trim("categoryId") as integer) as category_id,
        cast("name" as varchar) as name,
        cast(cell("displayName") as varchar) as display_name,
        try_cast(trim(cell("modifiedOn")) as timestamp) as modified_on,
        cast(cell("seoCategoryName") as varchar) as seo_category_name,
        cast(cell("sealedLabel") as varchar) as sealed_label,
        cast(cell("nonSealedLabel") as varchar) as non_sealed_label,
        cast(cell("conditionGuideUrl") as varchar) as condition_guide_url,
        as_bool("isScannable") as is_scannable,
        try_cast(trim(cell("popularity")) as integer) as popularity,
        _source_file as source_file,
        _source_row as source_row
    from valid
)
select * from final
