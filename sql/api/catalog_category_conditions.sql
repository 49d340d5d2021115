-- GET /v1.39.0/catalog/categories/{categoryId}/conditions (Catalog_GetCategoryConditions),
-- docs/contract.md §7. One row per condition (with a row in conditions) of the SKUs of category
-- $item_id's products (null: of every category, for the exporter), in catalog/conditions' order.
with
skus as (select * from marts.sku),
conditions as (select * from export.condition),
used as (
    select distinct category_id, condition_id from skus
    where $item_id is null or category_id = $item_id
),
final as (
    select
        used.category_id::bigint as path_id,
        conditions.condition_rank::bigint as position,
        (count(*) over (partition by used.category_id))::bigint as total_items,
        conditions.condition_id::bigint as item_id,
        conditions.condition_json as result_json
    from used
    join conditions using (condition_id)
)
select * from final order by path_id, position
