-- One row per published build, this one and every earlier one
-- @column build_id: Build identifier: UTC start time and a random suffix
-- @column started_at: When the build started (UTC)
-- @column finished_at: When the build finished its work, before publishing (UTC)
-- @column input_dir: Input directory
-- @column raw_rows: Rows loaded from all input files
-- @column rejected_rows: Rows left out (see meta.rejects of that build)
-- @column warnings: Warnings (see meta.warnings of that build)
-- @column stores: Known stores
-- @column listings: Accepted listings
-- @column pages: Inventory pages published
-- @column files: Files in the site
-- @column site_bytes: Bytes in the site
-- @column seconds: Wall time of ingest, transform and export
-- @column files_changed: Files written anew: changed or new since the previous build
-- @column volume_change_accepted: Whether --accept-volume-change let a move past the volume guards through (see the report's build_warnings): the rolling baseline (volume.baseline_builds) starts here
select
    null::varchar as build_id,
    null::timestamp as started_at,
    null::timestamp as finished_at,
    null::varchar as input_dir,
    null::bigint as raw_rows,
    null::bigint as rejected_rows,
    null::bigint as warnings,
    null::bigint as stores,
    null::bigint as listings,
    null::bigint as pages,
    null::bigint as files,
    null::bigint as site_bytes,
    null::double as seconds,
    null::bigint as files_changed,
    null::boolean as volume_change_accepted
where false  -- its columns alone: the rows are carried from release to release
