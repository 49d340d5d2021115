-- The release's rows in path order: the manifest's order.
select path, sha256, bytes from release order by path
