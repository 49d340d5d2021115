-- Warning: SKUs whose languageId has no language row. Kept, published with null name and abbr.
select
    'skus' as table_name, s.source_file, s.source_row,
    'languageId' as column_name, s.language_id::varchar as value,
    'unknown languageId (published with a null name)' as reason
from staging.skus as s
anti join staging.languages as l on l.language_id = s.language_id
