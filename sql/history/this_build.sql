-- This build's row of meta.build_run, from the build's summary.
select
    $build_id::varchar as build_id,
    $started_at::timestamp as started_at,
    $finished_at::timestamp as finished_at,
    $input_dir::varchar as input_dir,
    $raw_rows::bigint as raw_rows,
    $rejected_rows::bigint as rejected_rows,
    $warnings::bigint as warnings,
    $stores::bigint as stores,
    $listings::bigint as listings,
    $pages::bigint as pages,
    $files::bigint as files,
    $site_bytes::bigint as site_bytes,
    $seconds::double as seconds,
    $files_changed::bigint as files_changed,
    $volume_change_accepted::boolean as volume_change_accepted
