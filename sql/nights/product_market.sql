-- One row per catalog product x printing on one published night: marts.product_market as that
-- night's build made it.
-- @column build_id: The night's build (meta.build_run), the one file it was written to
-- @column built_at: When the night's build started (UTC)
select $build_id::varchar as build_id, $built_at::timestamp as built_at, *
from marts.product_market
