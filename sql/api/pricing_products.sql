-- GET /v1.39.0/pricing/product/{productIds}, docs/contract.md §7. The entries of pricing/group
-- of the products of $ids found, in the order first given, then by printingId; a product of the
-- catalog with no SKUs has one row with a null result_json (no entry, and no error).
with
-- @include api/asked_ids
products as (select product_id from staging.products),
prices as (select * from export.product_price),
final as (
    select
        null::bigint as path_id,
        (row_number() over (order by asked.position, prices.printing_id))::bigint as position,
        null::bigint as total_items,
        asked.id::bigint as item_id,
        prices.price_json as result_json
    from asked
    join products on products.product_id = asked.id
    left join prices on prices.product_id = asked.id
)
select * from final order by position
