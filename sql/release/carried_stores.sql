-- The versioned stores no shard wrote a page of: their rows are carried from the base release.
-- $store_page: the pattern of a store's page path, its first group the store's key.
select store from versioned
except
select regexp_extract(path, $store_page, 1) from written
