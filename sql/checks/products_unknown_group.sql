-- Products whose groupId has no group, or a group of another category: rejected.
select
    'products' as table_name, p.source_file, p.source_row,
    'groupId' as column_name, p.group_id::varchar as value,
    case when g.group_id is null then 'unknown groupId'
         else 'groupId belongs to another category' end as reason
from staging.products as p
left join staging.groups as g on g.group_id = p.group_id
where g.group_id is null or g.category_id <> p.category_id
