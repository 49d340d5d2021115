-- A store's matching entries of every product on a channel, for the listing flags
-- (store_product_entries with $product_id null): what `pipeline serve` keeps of a store for the
-- skus and quantity operations, which then read a product's entries from it
-- (kept_product_entries). Bind parameters: $store_keys (a list of one key), $channel_id, the
-- listing flags and $product_id (null).
with
-- @include api/parts/store_product_entries
final as (select * from entries)
select * from final
