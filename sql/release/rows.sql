-- One row per file of the release: the shards' pages and the carried stores' rows of `base`.
select * from written
union all
select path, sha256, bytes from base
where regexp_extract(path, $store_page, 1) in (select store from carried)
