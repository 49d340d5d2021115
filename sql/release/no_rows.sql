-- The manifest rows of no release (a night with no release before it).
select ''::varchar as path, ''::blob as sha256, 0::bigint as bytes
where false
