-- Groups whose categoryId has no category: rejected (their products could not be published).
select
    'groups' as table_name, g.source_file, g.source_row,
    'categoryId' as column_name, g.category_id::varchar as value,
    'unknown categoryId' as reason
from staging.groups as g
anti join staging.categories as c on c.category_id = g.category_id
