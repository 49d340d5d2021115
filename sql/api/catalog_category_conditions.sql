-- GET /v1.39.0/catalog/categories/{categoryId}/conditions (Catalog_GetCategoryConditions),
-- docs/contract.md §7. One row per condition (with a row in conditions) of the SKUs of category
-- $item_id's products, in catalog/conditions' order.
with
skus as (select * from marts.sku),
conditions as (select * from export.condition),
used as (select distinct condition_id from skus where category_id = $item_id),
final as (
    select
        conditions.condition_rank::bigint as position,
        (count(*) over ())::bigint as total_items,
        conditions.condition_id::bigint as item_id,
        conditions.condition_json as result_json
    from conditions
    join used using (condition_id)
)
select * from final order by position
