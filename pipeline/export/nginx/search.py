"""The nginx locations of the `POST` operations (`api.search.POST_OPERATIONS`, docs/contract.md
§12), for `pipeline.export.nginx`: a `POST` of their paths goes to `pipeline serve` with its
body, never cached, its answer `no-store`; a `GET` of them is 404 `URL not found.`; any other
method is 405, as everywhere. (docs/serving.md, "Search")"""

from __future__ import annotations

from pipeline.api.http import CORS, NO_STORE, VARY
from pipeline.api.search import POST_OPERATIONS
from pipeline.export.nginx.headers import upstream_headers
from pipeline.export.nginx.live import RELEASE_HEADER
from pipeline.export.nginx.syntax import quoted, regex_location

# The internal location every answered `POST` is passed on from.
POSTED = "/.posted"


def post_locations(only_get: str, not_found: str, release: str) -> str:
    """The location of every `POST` path (a `POST` rewritten to POSTED, a `GET` answered
    `not_found`: `return 404 ...;`), then POSTED, which tells the upstream `release`."""
    every = "|".join(op.location.removeprefix("^") for op in POST_OPERATIONS)
    cors = "".join(f"        add_header {name} {quoted(value)} always;\n" for name, value in CORS)
    return f"""{regex_location(f"^(?:{every})/?$")}
        if ($request_method = POST) {{
            rewrite ^ {POSTED} last;
        }}
{only_get}        types {{ }}
        default_type application/json;
        {not_found}
    }}
    location = {POSTED} {{
        internal;
        proxy_pass http://pipeline_live$request_uri;
        proxy_set_header Host $host;
        proxy_set_header {RELEASE_HEADER} {release};
        proxy_http_version 1.1;
        proxy_set_header Connection "";
{upstream_headers()}        # Answered anew each time: never kept here or by a client.
        add_header Cache-Control {quoted(NO_STORE)} always;
{cors}        add_header {VARY[0]} {quoted(VARY[1])};
    }}
"""
