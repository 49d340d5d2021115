-- The counts the volume guards compare, over the last $builds builds, the last first.
select listings, files, volume_change_accepted
from meta.build_run
order by started_at desc, build_id desc
limit $builds
