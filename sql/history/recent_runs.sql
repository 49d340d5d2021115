-- The last $limit builds of meta.build_run, the last first: what the report's charts show.
-- The order is the table's `started_at` (qualified), not the minute the query shows.
select
    build_id,
    strftime(started_at, '%Y-%m-%d %H:%M') as started_at,
    listings,
    files_changed,
    rejected_rows,
    seconds
from meta.build_run
order by build_run.started_at desc, build_id desc
limit $limit
