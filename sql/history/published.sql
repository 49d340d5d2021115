-- The build history as a release publishes it, oldest first.
select * from meta.build_run
order by started_at, build_id
