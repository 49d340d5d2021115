-- GET /v1.39.0/catalog/groups (Catalog_GetGroups), docs/contract.md §7. One row per group of the
-- answer, filtered by $category_id, $category_name (case-insensitive equality) and
-- $is_supplemental (a null value matches neither), in the order of the category listing:
-- $sort_order a field of the group (`api.params.GROUP_FIELDS`), descending when $order_desc;
-- text compares lower-cased (code-point order), false before true, a null before any value;
-- ties break on groupId ascending. $first_position / $last_position (1-based, inclusive, null
-- for no bound) cut the page.
with
groups as (select * from staging.groups),
fixed as (select * from export.catalog_group),
categories as (select * from staging.categories),
keyed as (
    select
        fixed.group_id,
        fixed.group_json,
        case $sort_order
            when 'name' then lower(groups.name)
            when 'abbreviation' then lower(groups.abbreviation)
        end as text_key,
        case $sort_order
            when 'groupId' then groups.group_id::bigint
            when 'categoryId' then groups.category_id::bigint
            when 'isSupplemental' then groups.is_supplemental::bigint
        end as number_key,
        case $sort_order
            when 'publishedOn' then groups.published_on
            when 'modifiedOn' then groups.modified_on
        end as time_key
    from fixed
    join groups using (group_id)
    left join categories on categories.category_id = groups.category_id
    where ($category_id is null or groups.category_id = $category_id)
      and ($category_name is null or lower(categories.name) = lower($category_name))
      and ($is_supplemental is null or groups.is_supplemental = $is_supplemental)
),
numbered as (
    -- One sort column per type and direction, null but for the requested one.
    select
        group_id,
        group_json,
        row_number() over (
            order by
                case when not $order_desc then text_key end asc nulls first,
                case when $order_desc then text_key end desc nulls last,
                case when not $order_desc then number_key end asc nulls first,
                case when $order_desc then number_key end desc nulls last,
                case when not $order_desc then time_key end asc nulls first,
                case when $order_desc then time_key end desc nulls last,
                group_id
        ) as position,
        count(*) over () as total_items
    from keyed
),
final as (
    select
        null::bigint as path_id,
        position::bigint as position,
        total_items::bigint as total_items,
        group_id::bigint as item_id,
        group_json as result_json
    from numbered
    where ($first_position is null or position >= $first_position)
      and ($last_position is null or position <= $last_position)
)
select * from final order by position
