-- GET /v1.39.0/pricing/group/{groupId} (Pricing_GetGroupPrices), docs/contract.md §7. One row
-- per product of group $item_id (null: of every group, for the exporter) and printing of its
-- SKUs, by productId then printingId.
with
prices as (select * from export.product_price),
final as (
    select
        group_id::bigint as path_id,
        (row_number() over (
            partition by group_id order by product_id, printing_id
        ))::bigint as position,
        (count(*) over (partition by group_id))::bigint as total_items,
        product_id::bigint as item_id,
        price_json as result_json
    from prices
    where $item_id is null or group_id = $item_id
)
select * from final order by path_id, position
