-- GET /v1.39.0/stores/{storeKey}/inventory/products answered from a store's products kept by
-- `pipeline serve` (pipeline/serve/cache.py): `named` is the whole answer of
-- `store_inventory_products` for one store, channel and listing flags (every product,
-- excluded categories too, no filter or bound), a table of the cache's own database whose
-- name is written in place of `kept_products`; the page is cut
-- from it by the same `store_inventory_page`, so its rows are that file's page's rows. They
-- come in the page's order: selecting columns keeps the order of the cut (DuckDB's order
-- preservation), and a second sort would cost about a tenth of the query.
with
named as (select * from kept_products),
-- @include api/parts/store_inventory_page
final as (select total_items::bigint as total_items, product_json from page)
select * from final
