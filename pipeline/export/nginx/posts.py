"""The nginx locations of the paths that take a POST (`api.urls.POST_PATHS`): a POST is passed
to `pipeline serve` with its body (at most `serve.max_request_body_size` bytes, else 413:
`client_max_body_size`), never cached; another method is answered as on any other path
(`location /`). A POST to any other path is 405 (each location's guard)."""

from __future__ import annotations

from pipeline.api.http import NO_STORE
from pipeline.api.urls import POST_PATHS
from pipeline.export.nginx.headers import add_headers, upstream_headers
from pipeline.export.nginx.live import RELEASE_HEADER
from pipeline.export.nginx.syntax import quoted, regex_location

# In the server block, before the rewrites that follow it: a POST goes to its path's location,
# a precondition notwithstanding (a POST path's answer is no cache's; anywhere else, 405).
POST_FIRST = """    if ($request_method = POST) {
        break;
    }
"""
# Where another method than POST goes: a URI no location but `location /` takes.
NOT_POSTED = "/.not-posted"


def post_locations(release: str) -> str:
    """A location for each POST path, telling the upstream `release` (`live.live_locations`).
    Its answer is no cache's to keep: `no-store`, whatever the upstream's status, and no
    `Expires` (the server's `expires` turned off)."""
    return "".join(
        f"""{regex_location(f"^{pattern}/?$")}
        if ($request_method != POST) {{
            rewrite ^ {NOT_POSTED}$uri last;
        }}
        expires off;
        proxy_pass http://pipeline_live;
        proxy_set_header Host $host;
        proxy_set_header {RELEASE_HEADER} {release};
        proxy_http_version 1.1;
        proxy_set_header Connection "";
{upstream_headers()}{add_headers("        ", quoted(NO_STORE))}    }}
"""
        for pattern in POST_PATHS.values()
    )
