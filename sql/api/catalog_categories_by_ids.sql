-- GET /v1.39.0/catalog/categories/{categoryIds}, docs/contract.md §7. One row per category of
-- $ids found, in the order first given, with the category listing's Category object.
with
-- @include api/asked_ids
categories as (select * from export.category),
final as (
    select
        null::bigint as path_id,
        asked.position::bigint as position,
        null::bigint as total_items,
        asked.id::bigint as item_id,
        categories.category_json as result_json
    from asked
    join categories on categories.category_id = asked.id
)
select * from final order by position
