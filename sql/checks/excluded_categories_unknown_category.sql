-- Warning: exclusions of a category that is not in the catalog. Kept; they exclude nothing.
select
    'excluded_categories' as table_name, e.source_file, e.source_row,
    'categoryId' as column_name, e.category_id::varchar as value,
    'unknown categoryId (excludes nothing)' as reason
from staging.excluded_categories as e
anti join staging.categories as c on c.category_id = e.category_id
