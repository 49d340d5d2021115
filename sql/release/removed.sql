-- The paths of the base release the new one no longer holds.
select b.path from base as b anti join sorted as n using (path) order by path
