-- Listings whose skuId is not in the catalog (after the catalog's own rejects): rejected.
select
    'listings' as table_name, l.source_file, l.source_row,
    'skuId' as column_name, l.sku_id::varchar as value,
    'unknown skuId' as reason
from staging.listings as l
anti join staging.skus as s on s.sku_id = l.sku_id
