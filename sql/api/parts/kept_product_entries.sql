-- The entries of $product_id among a store's entries kept by `pipeline serve`
-- (pipeline/serve/cache.py: the rows of store_entries for the store, the channel and the
-- listing flags, a table of the cache's own database whose name is written in place of
-- `kept_entries`): the rows store_product_entries gives for the
-- product. Included in its place by the kept variant of a query that includes it. Ends with a
-- comma.
entries as (select * from kept_entries where product_id = $product_id),
