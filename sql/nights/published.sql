-- The published builds (meta.build_run, this one included): the nights history.* may list.
select build_id from meta.build_run
