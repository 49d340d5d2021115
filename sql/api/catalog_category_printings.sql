-- GET /v1.39.0/catalog/categories/{categoryId}/printings (Catalog_GetCategoryPrintings),
-- docs/contract.md §7. One row per printing (with a row in printings) of the SKUs of category
-- $item_id's products (null: of every category, for the exporter), by displayOrder (nulls
-- last), then printingId.
with
skus as (select * from marts.sku),
printings as (select * from staging.printings),
used as (
    select distinct category_id, printing_id from skus
    where $item_id is null or category_id = $item_id
),
final as (
    select
        used.category_id::bigint as path_id,
        (row_number() over (
            partition by used.category_id
            order by printings.display_order asc nulls last, printings.printing_id
        ))::bigint as position,
        (count(*) over (partition by used.category_id))::bigint as total_items,
        printings.printing_id::bigint as item_id,
        concat(
            '{"printingId":', printings.printing_id,
            ',"name":', json_text(printings.name),
            ',"displayOrder":', coalesce(printings.display_order::varchar, 'null'),
            ',"modifiedOn":', json_time(printings.modified_on), '}'
        ) as result_json
    from used
    join printings using (printing_id)
)
select * from final order by path_id, position
