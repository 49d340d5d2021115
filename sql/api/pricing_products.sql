-- GET /v1.39.0/pricing/product/{productIds}, docs/contract.md §7. The entries of pricing/group
-- of the products of $ids found, by productId then printingId (the answer takes the products in
-- the order the ids are first given); a product of the catalog with no SKUs has one row with a
-- null result_json (no entry, and no error).
with
products as (select product_id from export.catalog_product where product_id = any($ids::bigint[])),
prices as (select * from export.product_price where product_id = any($ids::bigint[])),
final as (
    select
        null::bigint as path_id,
        prices.printing_id::bigint as position,
        null::bigint as total_items,
        products.product_id::bigint as item_id,
        prices.price_json as result_json
    from products
    left join prices using (product_id)
)
select * from final order by item_id, position
