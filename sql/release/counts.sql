-- The release's files and their bytes.
select count(*) as files, coalesce(sum(bytes), 0) as bytes from sorted
