"""The HTTP around the bytes in the generated nginx configuration: ETag and 304, gzip on the fly,
Cache-Control, CORS, and the proxy cache of the live answers, from the values `pipeline serve`
answers by (`api/http.py`). (docs/serving.md, "HTTP around the bytes")"""

from __future__ import annotations

from pathlib import Path

from pipeline.api.http import (
    ALLOW_HEADERS,
    CACHED_STATUSES,
    CORS,
    GZIP_LEVEL,
    GZIP_MIN_LENGTH,
    GZIP_TYPES,
    MAX_RANGES,
    NO_STORE,
    PREFLIGHT,
    VARY,
    cache_control,
    nginx_time,
)
from pipeline.export.nginx.syntax import literal, quoted

# The proxy cache of the live answers, and what a cached answer's key starts with: the release
# (a publish changes it, so no answer of the last release is served after it).
CACHE_ZONE = "pipeline_live"
# The headers nginx adds itself: the upstream's (`pipeline serve`'s, a bucket's) are hidden.
ADDED = ("Cache-Control", "Expires", "Vary", *(name for name, _ in CORS))


def http_level(max_age: int, cache_dir: Path, publish_at: str | None = None) -> str:
    """At the configuration's top level: Cache-Control by status (`expires` adds its own with
    a publish scheduled at `publish_at`), and the live answers' cache (each kept `max_age`
    seconds, and dropped unasked that long)."""
    statuses = "".join(
        f'    {status} "{cache_control(status, publish_at)}";\n' for status in CACHED_STATUSES
    )
    return (
        "# Cache-Control by status: fresh until the next publish, never kept for errors.\n"
        "map $status $inv_cache_control {\n"
        f'    default "{NO_STORE}";\n{statuses}}}\n\n'
        "# The live answers, kept until the next build: their key starts with the release.\n"
        f"proxy_cache_path {literal(str(cache_dir), 'the live answers cache folder')} levels=1:2 "
        f"keys_zone={CACHE_ZONE}:10m inactive={max_age}s use_temp_path=off;\n"
    )


def add_headers(indent: str, cache_control: str = "$inv_cache_control") -> str:
    """The headers every answer gets; repeated in a block with an `add_header` of its own
    (such a block inherits none), with another `cache_control` where no cache may keep it."""
    lines = [
        f"add_header Cache-Control {cache_control} always;",
        *(f"add_header {name} {quoted(value)} always;" for name, value in CORS),
        f"add_header {VARY[0]} {quoted(VARY[1])};",  # 200 and 304, as `pipeline serve`
        'add_header Last-Modified "";',  # the ETag is the one validator
    ]
    return "".join(f"{indent}{line}\n" for line in lines)


def server_level(publish_at: str | None = None) -> str:
    """In the server block: nginx's ETag of a file, If-None-Match answered (If-Modified-Since
    is not: a request with it gets the whole body), one byte range of a file, freshness until
    the next publish at `publish_at`, gzip on the fly, the headers."""
    expires = (
        "    # Fresh until the next publish (a time of day in nginx's time zone: UTC).\n"
        f"    expires @{nginx_time(publish_at)};\n"
        if publish_at is not None
        else ""
    )
    return (
        "    # One byte range of a file (206, 416); several ranges are answered whole.\n"
        f"    max_ranges {MAX_RANGES};\n"
        + expires
        + "    # The validator: nginx's ETag of a file (mtime and size), the upstream's of a live\n"
        "    # answer; If-None-Match naming it is 304. No Last-Modified, no If-Modified-Since.\n"
        "    etag on;\n"
        "    if_modified_since off;\n"
        "    # Compressed on the fly for a client that accepts it (the ETag made weak), proxies\n"
        "    # and CDNs included; the body decompresses to the file's bytes.\n"
        "    gzip on;\n"
        f"    gzip_types {' '.join(t for t in GZIP_TYPES if t != 'text/html')};\n"
        f"    gzip_min_length {GZIP_MIN_LENGTH};\n"
        f"    gzip_comp_level {GZIP_LEVEL};\n"
        "    gzip_proxied any;\n"
        "    gzip_vary off;\n" + add_headers("    ")
    )


def live_cache(key: str, max_age: int) -> str:
    """The directives of `@live`: the upstream's answer kept in the cache under `key` (an nginx
    value starting with the release) `max_age` seconds, whatever its freshness for clients,
    asked uncompressed and without validators (nginx answers them), its Vary ignored (nginx
    compresses, one entry a URL)."""
    lines = [
        f"proxy_cache {CACHE_ZONE};",
        f"proxy_cache_key {quoted(key)};",
        "proxy_cache_lock on;",
        "proxy_ignore_headers Vary Cache-Control Expires;",
        f"proxy_cache_valid 200 {max_age}s;",
    ]
    return "".join(f"        {line}\n" for line in lines)


def upstream_headers() -> str:
    """The directives of any location reaching an upstream: the answer asked uncompressed
    (nginx compresses it), the headers nginx adds itself hidden."""
    lines = ['proxy_set_header Accept-Encoding "";', *(f"proxy_hide_header {n};" for n in ADDED)]
    return "".join(f"        {line}\n" for line in lines)


def preflight(indent: str) -> str:
    """A CORS preflight (OPTIONS) answered 204 with the methods, the headers it asks for
    echoed, and the headers every answer gets; before a location's other directives."""
    lines = [
        *(f"add_header {name} {quoted(value)} always;" for name, value in PREFLIGHT),
        f"add_header {ALLOW_HEADERS} $http_access_control_request_headers always;",
    ]
    inner = "".join(f"{indent}    {line}\n" for line in lines) + add_headers(indent + "    ")
    return (
        f"{indent}if ($request_method = OPTIONS) {{\n{inner}{indent}    return 204;\n{indent}}}\n"
    )
