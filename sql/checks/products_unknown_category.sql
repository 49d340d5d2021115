-- Products whose categoryId has no category: rejected.
select
    'products' as table_name, p.source_file, p.source_row,
    'categoryId' as column_name, p.category_id::varchar as value,
    'unknown categoryId' as reason
from staging.products as p
anti join staging.categories as c on c.category_id = p.category_id
