"""nginx in front of a bucket: the local configuration's locations, a page read by proxy at
its key in the committed release. (docs/serving.md, "nginx in front of a bucket")"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from pipeline.api.urls import STORES_DIR
from pipeline.export.nginx.headers import CACHE_ZONE, upstream_headers
from pipeline.export.nginx.syntax import included, literal, map_key, quoted

# The headers of the bucket's answer that the local configuration does not send (nginx answers
# a range itself, the ETag the one validator: the object's), and the client's that would make the
# bucket answer otherwise. nginx keeps the objects in its cache under their keys, which are never
# rewritten, and answers If-None-Match itself, as for a local file.
HIDDEN = ("Last-Modified", "Accept-Ranges", "x-amz-request-id", "x-amz-id-2", "Server")
# A client's Authorization (a token of the live service's, which no read asks for) is not the
# bucket's: S3 refuses a request whose Authorization it cannot read.
CLEARED = (
    "Range",
    "If-Match",
    "If-None-Match",
    "If-Modified-Since",
    "If-Unmodified-Since",
    "Authorization",
)


@dataclass(frozen=True)
class BucketOrigin:
    """Where the bucket answers: `endpoint` (http://host:port, path-style) and `path`
    (/bucket/prefix), and the release's map file."""

    endpoint: str
    path: str
    release_map: Path

    @property
    def host(self) -> str:
        return self.endpoint.partition("://")[2].rstrip("/")

    @property
    def scheme(self) -> str:
        return self.endpoint.partition("://")[0]

    @property
    def key_prefix(self) -> str:
        """`path` as the start of a request's URI to the bucket (percent-encoded)."""
        return quote(self.path, safe="/")


def upstream_and_map(origin: BucketOrigin) -> str:
    """The bucket's upstream and the release's map, at the configuration's top level."""
    return (
        f"# The committed release: store -> version, and the common pages' version.\n"
        f"include {included(str(origin.release_map))};\n"
        "upstream pipeline_bucket {\n"
        f"    server {literal(origin.host, 'the bucket endpoint')};\n"
        "}\n"
    )


def serve_object(
    origin: BucketOrigin, path: str, fallback: str, error_pages: str, max_age: int
) -> str:
    """The directives that answer a location from the object of the site file at `path`
    (nginx variables allowed, `$..._store` naming the store), `fallback` where it has none;
    the object kept in nginx's cache `max_age` seconds."""
    store = re.fullmatch(rf"/{re.escape(STORES_DIR)}/(\$\w+)/(.*)", path)
    literal(origin.key_prefix, "the bucket's path")  # refused where nginx cannot write it
    prefix = origin.key_prefix
    if store:
        key = f"{prefix}/stores/$bk_store/$bk_version/{store[2]}"
        lines = [
            f"set $bk_store {quoted(store[1])};",
            f"set $bk_key {quoted(key)};",
            "if ($bk_version = '') {",
            "    return 418;",
            "}",
        ]
    else:
        lines = [f"set $bk_key {quoted(f'{prefix}/common/$bk_common{path}')};"]
    missing = "@live" if fallback == "@live" else "/.errors/404"
    tls = origin.scheme == "https"
    host = literal(origin.host, "the bucket endpoint")
    lines += [
        f"proxy_pass {origin.scheme}://pipeline_bucket$bk_key;",
        *([f"proxy_ssl_name {host};", "proxy_ssl_server_name on;"] if tls else []),
        "proxy_method GET;",
        f"proxy_set_header Host {host};",
        *(f'proxy_set_header {name} "";' for name in CLEARED),
        *(f"proxy_hide_header {name};" for name in HIDDEN),
        f"proxy_cache {CACHE_ZONE};",
        "proxy_cache_key $bk_key;",
        f"proxy_cache_valid 200 {max_age}s;",
        "proxy_force_ranges on;",  # one byte range of the object, as of a file
        "proxy_intercept_errors on;",
        "proxy_http_version 1.1;",
        'proxy_set_header Connection "";',
        f"error_page 403 404 418 = {missing};",
    ]
    # A location's error_page replaces the server's: the envelopes of nginx's own errors again.
    return (
        "".join(f"        {line}\n" for line in lines)
        + upstream_headers()
        + error_pages.replace("    ", "        ")
    )


def release_map(stores: Mapping[str, str], common: str, build: str) -> str:
    """The map file of one release: its store -> version map, its common version and its
    build (`$bk_build`, told to the live upstream: `live.RELEASE_HEADER`), each key a string
    whatever it spells (`default`, `include`: `syntax.map_key`)."""
    lines = [
        f"    {map_key(key)} {literal(version, f'store {key!r}: version')};"
        for key, version in sorted(stores.items())
    ]
    return (
        "map $bk_store $bk_version {\n"
        '    default "";\n' + "".join(f"{line}\n" for line in lines) + "}\n"
        f"map $host $bk_common {{\n    default {literal(common, 'the common version')};\n}}\n"
        f"map $host $bk_build {{\n    default {literal(build, 'the build')};\n}}\n"
    )
