"""The nginx configuration the build emits (`OUTPUT/nginx.conf`), so that nginx and
`pipeline serve` answer every request alike. (docs/serving.md, "nginx and the live server")"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from pipeline.api.http import NO_STORE
from pipeline.api.responses import (
    ALLOWED_METHODS,
    RANGE_NOT_SATISFIABLE,
    STATUS_MESSAGES,
    TOO_LONG,
    URL_NOT_FOUND,
    error_body,
    method_not_allowed,
)
from pipeline.api.urls import (
    CATEGORIES_DIR,
    CATEGORIES_PATH,
    HELP_FILE,
    HELP_PATH,
    MAX_TARGET,
    OPENAPI_FILE,
    OPENAPI_PATH,
    PRODUCTS_DIR,
    STORES_DIR,
    VERSION,
)
from pipeline.contract import STORED_KEY_PATTERN
from pipeline.export.nginx.bucket import BucketOrigin, serve_object, upstream_and_map
from pipeline.export.nginx.bulk import bulk_location
from pipeline.export.nginx.catalog import catalog_locations
from pipeline.export.nginx.headers import add_headers, http_level, preflight, server_level
from pipeline.export.nginx.live import LIVE, RECURSIVE, TO_LIVE, live_locations
from pipeline.export.nginx.operations import store_operation_locations
from pipeline.export.nginx.params import query_maps
from pipeline.export.nginx.posts import POST_FIRST, post_locations
from pipeline.export.nginx.syntax import literal, regex_location
from pipeline.paths import NGINX_CONF, SITE
from pipeline.settings import FIRST_HEADER_BUFFER, HEADER_BUFFER, ServeSettings, Settings


def _envelope(message: str) -> str:
    """The error body as a double-quoted nginx string (variables such as $request_method are
    interpolated)."""
    body = error_body([message]).decode()
    return '"' + body.replace("\\", "\\\\").replace('"', '\\"') + '"'


# The statuses nginx raises under another code: 494 (a header line past a buffer, or all the
# buffers full) is 431, as waitress says it; a failed upstream is 503.
_RAISED_AS = {431: "494", 503: "502 503 504"}


def _error_pages() -> tuple[str, str]:
    """The `error_page` lines and their internal locations: each error nginx raises itself is
    answered with the error envelope. 405 is TRACE, refused before any location: after the
    redirect `$request_method` says GET, so the message takes the method from the request line."""
    pages = ["    error_page 405 /.errors/405;"]
    locations = [
        "    location = /.errors/405 {\n"
        "        internal;\n"
        f'        add_header Allow "{", ".join(ALLOWED_METHODS)}" always;\n'
        f"{add_headers('        ')}"
        f"        return 405 {_envelope(method_not_allowed('$refused_method'))};\n"
        "    }"
    ]
    # 416: nginx's range filter raises it after the 200's headers were added (they stay, but
    # the ETag); the envelope, and `no-store`, which wins over the 200's freshness.
    pages.append("    error_page 416 /.errors/416;")
    locations.append(
        "    location = /.errors/416 {\n"
        "        internal;\n"
        f'        add_header Cache-Control "{NO_STORE}" always;\n'
        '        add_header ETag "" always;\n'
        f"        return 416 {_envelope(RANGE_NOT_SATISFIABLE)};\n"
        "    }"
    )
    for status, message in STATUS_MESSAGES.items():
        raised = _RAISED_AS.get(status, str(status))
        overwrite = "" if raised == str(status) else f"={status} "
        pages.append(f"    error_page {raised} {overwrite}/.errors/{status};")
        locations.append(
            f"    location = /.errors/{status} {{\n"
            "        internal;\n"
            f"        return {status} {_envelope(message)};\n"
            "    }"
        )
    return "\n".join(pages), "\n".join(locations)


def _only_get() -> str:
    """The guard every location opens with: it answers other methods itself, since an
    error_page redirect would turn the request into a GET, and the message names the method."""
    methods = "|".join(ALLOWED_METHODS)
    return preflight("        ") + (
        f"        if ($request_method !~ ^({methods})$) {{\n"
        f'            add_header Allow "{", ".join(ALLOWED_METHODS)}" always;\n'
        f"{add_headers('            ')}"
        f"            return 405 {_envelope(method_not_allowed('$request_method'))};\n"
        "        }\n"
    )


def _request_maps() -> str:
    """The maps over the request itself: its target's length, its preconditions, the method of
    its request line."""
    return f"""\
# The preview server answers 414 past {MAX_TARGET} characters of request target; so does nginx.
map $request_uri $target_too_long {{
    default 0;
    "~^.{{{MAX_TARGET + 1},}}" 1;
}}

# 1 when the request has a precondition nginx does not answer as `pipeline serve` does (see the
# server block), not on the way to an error page.
map "$http_if_match$http_if_unmodified_since" $inv_precondition {{
    default 1;
    "" 0;
}}
map "$inv_precondition$uri" $inv_conditional {{
    volatile;
    default 0;
    "~^1/(?![.]errors/)" 1;
}}

# The method of the request line, for the 405 of a request nginx refuses before any location.
map $request $refused_method {{
    default "";
    "~^(?<rm>[^ ]+) " $rm;
}}
"""


def _limits(limits: ServeSettings) -> str:
    """The limits of `pipeline serve` (settings `serve.*`), with the same numbers."""
    timeout = f"{limits.channel_timeout}s"
    return f"""\
    # The limits of `pipeline serve` (settings `serve.*`), with the same numbers. A request or
    # header line fits one buffer ({HEADER_BUFFER} bytes: a target past {MAX_TARGET} is 414);
    # `pipeline serve` reads a head into these buffers as nginx does (`serve.protocol`).
    client_header_buffer_size {FIRST_HEADER_BUFFER};
    large_client_header_buffers {limits.max_request_header_size // HEADER_BUFFER} {HEADER_BUFFER};
    client_max_body_size {limits.max_request_body_size};
    keepalive_timeout {timeout};
    client_header_timeout {timeout};
    client_body_timeout {timeout};
    send_timeout {timeout};
"""


def _page_locations(serve: Callable[[str, str], str]) -> str:
    """The API's locations: each answered from its file by `serve` (path, fallback), or, for a
    store key nginx does not serve from a file, from the live upstream; 404 elsewhere."""
    only_get = _only_get()
    stores_re, products_re = re.escape(STORES_DIR), re.escape(PRODUCTS_DIR)
    store = f"(?<inv_store>{STORED_KEY_PATTERN})"
    return f"""{regex_location(f"^/{stores_re}/{store}/{products_re}/?$")}
{only_get}{serve(f"/{STORES_DIR}/$inv_store/{PRODUCTS_DIR}/$inv_page.json", LIVE)}    }}
{regex_location(f"^/{stores_re}/[^/]+/{products_re}/?$")}
{only_get}{TO_LIVE}    }}
{store_operation_locations(only_get, serve)}
{catalog_locations(only_get, serve)}
{regex_location(f"^{re.escape(CATEGORIES_PATH)}/?$")}
{only_get}{serve(f"/{CATEGORIES_DIR}/$cat_page.json", LIVE)}    }}
{regex_location(f"^{re.escape(HELP_PATH)}/?$")}
{only_get}        types {{ text/html html; }}
{serve(f"/{HELP_FILE}", "=404")}    }}
{regex_location(f"^{re.escape(OPENAPI_PATH)}/?$")}
{only_get}{serve(f"/{OPENAPI_FILE}", "=404")}    }}
{bulk_location(only_get, serve)}
    location / {{
{only_get}        types {{ }}
        default_type application/json;
        return 404 {_envelope(URL_NOT_FOUND)};
    }}
"""


def _server(
    site_root: Path,
    listen: str,
    limits: ServeSettings,
    serve: Callable[[str, str], str],
    release: str,
    release_root: str,
) -> str:
    """The server block: one byte range of a file, the headers, the limits, the error pages, the
    locations (the live ones telling the upstream `release`, their answers cached under the
    release, `release_root`: `live_locations`; the POST paths': `post_locations`)."""
    error_pages, error_locations = _error_pages()
    live = live_locations(release, f"{release_root}$request_uri", limits.max_age)
    return f"""server {{
    listen {literal(listen, "the address to listen on")};
    root {literal(str(site_root), "the site's folder")};
    default_type application/json;
    charset utf-8;
    charset_types application/json;
    absolute_redirect off;
    server_tokens off;
{server_level(limits.publish_at)}
{_limits(limits)}
    # Error pages are internal URIs, not named locations: a request nginx rejects while
    # reading the request line has no URI to carry into a named location. They apply after a
    # location's hop to @live too (`live.py`).
{error_pages}
{RECURSIVE}
    if ($target_too_long) {{
        return 414 {_envelope(TOO_LONG)};
    }}
{POST_FIRST}    # A request with a precondition a file would answer 412 to (If-Match,
    # If-Unmodified-Since) goes to the upstream, which ignores it.
    if ($inv_conditional) {{
        rewrite ^ /.live last;
    }}

{_page_locations(serve)}
{live}{post_locations(release)}{error_locations}
}}
"""


def render(
    site_root: Path,
    listen: str,
    upstream: str,
    limits: ServeSettings | None = None,
    bucket: BucketOrigin | None = None,
    cache: Path | None = None,
) -> str:
    """The configuration for a site published at `site_root` (absolute), with the limits of
    `pipeline serve` (the `serve` settings); with `bucket`, for the site in that bucket
    (`bucket`), read through the release's map. nginx keeps idle connections to the live
    upstream (as many as it has threads), closing one a second before the server would, and
    keeps the live answers in `cache` (default: the setting `serve.nginx_cache`)."""
    limits = limits or ServeSettings()
    cache = cache or limits.nginx_cache
    # What nginx tells the upstream, and what names the release in a cached answer's key: in
    # front of a bucket, the build of the map; locally, nothing, and the folder OUTPUT/site
    # resolves to (releases/<id>/site), which a publish changes without a reload.
    releases = ("$bk_build", "$bk_build") if bucket else ('""', "$realpath_root")

    def serve(path: str, fallback: str) -> str:
        """The directives answering a location from the site file at `path`, else `fallback`."""
        if bucket is None:
            return f"        try_files {path} {fallback};\n"
        return serve_object(bucket, path, fallback, _error_pages()[0], limits.max_age)

    return f"""# Store inventory API {VERSION}, generated by `pipeline build`.
# Include inside http {{ }}.
# Materialised pages are served from {site_root}; everything else goes to `pipeline serve`
# at {upstream}.

{query_maps()}
{_request_maps()}
{http_level(limits.max_age, cache, limits.publish_at)}
{upstream_and_map(bucket) if bucket else ""}upstream pipeline_live {{
    server {literal(upstream, "the live upstream")};
    keepalive {limits.threads};
    keepalive_timeout {max(1, limits.channel_timeout - 1)}s;
}}

{_server(site_root, listen, limits, serve, *releases)}"""


def write_nginx_conf(release: Path, settings: Settings) -> None:
    """The release's nginx configuration, for the site as published at OUTPUT/site."""
    site = (settings.output / SITE).absolute()
    conf = render(site, settings.serve.nginx_listen, settings.serve.nginx_upstream, settings.serve)
    (release / NGINX_CONF).write_text(conf, encoding="utf-8")
