-- The ids of a path's list ($ids, as given), each once, at the place it is first given. Not a
-- query of its own: the CTE below is included (`-- @include api/asked_ids`) by every operation
-- on a list of ids (docs/contract.md §7), and it ends with a comma.
asked as (
    select id, min(position) as position
    from (select unnest($ids::bigint[]) as id, generate_subscripts($ids::bigint[], 1) as position)
    group by id
),
