-- GET /v1.39.0/catalog/categories/{categoryIds}, docs/contract.md §7. One row per category of
-- $ids found, with the category listing's Category object; the answer takes them in the order
-- the ids are first given.
with
categories as (select * from export.category),
final as (
    select
        null::bigint as path_id,
        category_id::bigint as position,
        null::bigint as total_items,
        category_id::bigint as item_id,
        category_json as result_json
    from categories
    where category_id = any($ids::bigint[])
)
select * from final order by position
