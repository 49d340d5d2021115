-- A path the release holds twice, if any: a site holds each file once.
select path from release group by path having count(*) > 1 limit 1
