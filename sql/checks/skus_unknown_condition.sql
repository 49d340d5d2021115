-- Warning: SKUs whose conditionId has no condition row. Kept: the API allows an invalid or
-- deprecated condition identifier (spec 2.4); it is published with a null name.
select
    'skus' as table_name, s.source_file, s.source_row,
    'conditionId' as column_name, s.condition_id::varchar as value,
    'unknown conditionId (published with a null name)' as reason
from staging.skus as s
anti join staging.conditions as c on c.condition_id = s.condition_id
