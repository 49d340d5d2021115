-- The paths written anew: new, or changed since the base release.
select n.path
from sorted as n
anti join base as b on n.path = b.path and n.sha256 = b.sha256
order by n.path
