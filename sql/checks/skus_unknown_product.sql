-- SKUs whose productId has no product: rejected.
select
    'skus' as table_name, s.source_file, s.source_row,
    'productId' as column_name, s.product_id::varchar as value,
    'unknown productId' as reason
from staging.skus as s
anti join staging.products as p on p.product_id = s.product_id
