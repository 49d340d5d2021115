-- The rows of manifests in Parquet ($files: a list of paths), one row per file of a site.
select path, sha256, bytes from read_parquet($files)
