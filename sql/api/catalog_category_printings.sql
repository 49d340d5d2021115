-- GET /v1.39.0/catalog/categories/{categoryId}/printings (Catalog_GetCategoryPrintings),
-- docs/contract.md §7. One row per printing (with a row in printings) of the SKUs of category
-- $item_id's products, by displayOrder (nulls last), then printingId.
with
skus as (select * from marts.sku),
printings as (select * from staging.printings),
used as (select distinct printing_id from skus where category_id = $item_id),
final as (
    select
        (row_number() over (
            order by printings.display_order asc nulls last, printings.printing_id
        ))::bigint as position,
        (count(*) over ())::bigint as total_items,
        printings.printing_id::bigint as item_id,
        concat(
            '{"printingId":', printings.printing_id,
            ',"name":', json_text(printings.name),
            ',"displayOrder":', coalesce(printings.display_order::varchar, 'null'),
            ',"modifiedOn":', json_time(printings.modified_on), '}'
        ) as result_json
    from printings
    join used using (printing_id)
)
select * from final order by position
