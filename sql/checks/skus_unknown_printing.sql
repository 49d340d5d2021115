-- Warning: SKUs whose printingId has no printing row. Kept, published with foil false.
select
    'skus' as table_name, s.source_file, s.source_row,
    'printingId' as column_name, s.printing_id::varchar as value,
    'unknown printingId (published as not foil)' as reason
from staging.skus as s
anti join staging.printings as p on p.printing_id = s.printing_id
