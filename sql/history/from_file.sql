-- The build history as a release published it (its `build_run.parquet`, $path).
select * from read_parquet($path)
