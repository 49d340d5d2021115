-- GET /v1.39.0/catalog/categories (Catalog_GetCategories), docs/contract.md §6.
-- One row per category of the answer, in the requested order, with its Category JSON. Run with
-- bind parameters: $sort_field a field of the category (`api.params.CATEGORY_FIELDS`, the
-- default 'name'), $sort_desc a boolean; ties break on categoryId ascending. Text compares
-- lower-cased (code-point order), false before true, and a null before any value (it is the
-- last in a descending order). $first_position / $last_position (1-based, inclusive, null for
-- no bound) cut the page; the exporter reads the whole order.
with
category as (select * from staging.categories),
fixed as (select * from export.category),
keyed as (
    select
        fixed.category_id,
        fixed.category_json,
        case $sort_field
            when 'name' then lower(category.name)
            when 'displayName' then lower(category.display_name)
            when 'seoCategoryName' then lower(category.seo_category_name)
            when 'categoryDescription' then lower(category.category_description)
            when 'categoryPageTitle' then lower(category.category_page_title)
            when 'sealedLabel' then lower(category.sealed_label)
            when 'nonSealedLabel' then lower(category.non_sealed_label)
            when 'conditionGuideUrl' then lower(category.condition_guide_url)
        end as text_key,
        case $sort_field
            when 'categoryId' then category.category_id::bigint
            when 'popularity' then category.popularity::bigint
            when 'isScannable' then category.is_scannable::bigint
            when 'isDirect' then category.is_direct::bigint
        end as number_key,
        case when $sort_field = 'modifiedOn' then category.modified_on end as time_key
    from fixed
    join category using (category_id)
),
numbered as (
    -- One sort column per type and direction, null but for the requested one.
    select
        category_id,
        category_json,
        row_number() over (
            order by
                case when not $sort_desc then text_key end asc nulls first,
                case when $sort_desc then text_key end desc nulls last,
                case when not $sort_desc then number_key end asc nulls first,
                case when $sort_desc then number_key end desc nulls last,
                case when not $sort_desc then time_key end asc nulls first,
                case when $sort_desc then time_key end desc nulls last,
                category_id
        ) as position,
        count(*) over () as total_items
    from keyed
),
final as (
    select
        category_id::integer as category_id,
        position::bigint as position,
        total_items::bigint as total_items,
        category_json
    from numbered
    where ($first_position is null or position >= $first_position)
      and ($last_position is null or position <= $last_position)
)
select * from final order by position
