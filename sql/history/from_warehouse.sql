-- The build history of a release's warehouse, attached as `previous`.
select * from previous.meta.build_run
