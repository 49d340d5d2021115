"""nginx in front of a bucket: the local configuration's locations, a page read by proxy at
its key in the committed release. (docs/serving.md, "nginx in front of a bucket")"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from pipeline.api.urls import BULK_DIR, STORES_DIR, catalog_unit
from pipeline.errors import BuildError
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
# The object store's own headers of an object's answer (S3's GetObject, and moto's): its ids,
# checksums, storage, encryption, versions, locks, tags. No other server of the site sends them.
# (User metadata, `x-amz-meta-*`, has names of its own: a publish writes none.)
STORE_HEADERS = (
    "x-amzn-requestid",
    "x-amz-content-sha256",
    "x-amz-version-id",
    "x-amz-delete-marker",
    "x-amz-expiration",
    "x-amz-restore",
    "x-amz-missing-meta",
    "x-amz-website-redirect-location",
    "x-amz-server-side-encryption",
    "x-amz-server-side-encryption-customer-algorithm",
    "x-amz-server-side-encryption-customer-key-md5",
    "x-amz-server-side-encryption-aws-kms-key-id",
    "x-amz-server-side-encryption-bucket-key-enabled",
    "x-amz-storage-class",
    "x-amz-request-charged",
    "x-amz-replication-status",
    "x-amz-mp-parts-count",
    "x-amz-tagging-count",
    "x-amz-object-lock-mode",
    "x-amz-object-lock-retain-until-date",
    "x-amz-object-lock-legal-hold",
    "x-amz-checksum-crc32",
    "x-amz-checksum-crc32c",
    "x-amz-checksum-crc64nvme",
    "x-amz-checksum-sha1",
    "x-amz-checksum-sha256",
    "x-amz-checksum-type",
    "x-amz-bucket-region",
)
# The socket, beside the release's map, on which the server also listens for itself: a request
# with a precondition (If-Match, If-Unmodified-Since), which `pipeline serve` ignores, is asked
# again there without it, so that it gets the object, and its ETag, as a plain GET does.
LOOP_SOCKET = "loop.sock"
LOOP_UPSTREAM = "pipeline_bucket_loop"
# The longest path of a unix-domain socket (`sun_path`, with its terminating NUL).
SOCKET_PATH_BYTES = 107


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
    def loop(self) -> str:
        """The unix-domain socket the server listens on for itself (`LOOP_SOCKET`), as nginx's
        `listen` and `server` write it; BuildError where no socket can have its path."""
        path = str(self.release_map.parent / LOOP_SOCKET)
        if len(path.encode()) > SOCKET_PATH_BYTES:
            raise BuildError(
                f"{path}: a unix-domain socket's path has at most {SOCKET_PATH_BYTES} bytes; "
                "choose a shorter folder for `pipeline nginx-bucket`"
            )
        return f"unix:{path}"

    @property
    def key_prefix(self) -> str:
        """`path` as the start of a request's URI to the bucket (percent-encoded)."""
        return quote(self.path, safe="/")


# A bulk file's unit (`urls.catalog_unit`, in nginx's words): its category's or its group's,
# else (index.json) the index's.
BULK_UNIT = r"""map $bulk_file $bk_bulk_unit {
    default bulk/index;
    "~^(?<bk_c>-?[0-9]+)\.parquet$" categories/$bk_c;
    "~^-?[0-9]+/(?<bk_g>-?[0-9]+)\.csv$" groups/$bk_g;
}
"""


def upstream_and_map(origin: BucketOrigin) -> str:
    """The bucket's upstream and the release's map, at the configuration's top level."""
    return (
        "# The committed release: store -> version, each group's and category's, the common\n"
        "# pages' version.\n"
        f"include {included(str(origin.release_map))};\n"
        f"{BULK_UNIT}"
        "upstream pipeline_bucket {\n"
        f"    server {literal(origin.host, 'the bucket endpoint')};\n"
        "}\n"
        f"upstream {LOOP_UPSTREAM} {{\n"
        f"    server {literal(origin.loop, 'the loop socket')};\n"
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
    else:  # a group's, a category's (`urls.catalog_unit`) or the common pages' version
        # Each read before a map's regular expression resets the location's captures: the
        # unit (a path id) before the path (its page's map), the bulk file before its map.
        lines = [
            f"set $bk_unit {quoted(catalog_unit(path[1:]) or 'common')};",
            f"set $bk_path {quoted(path)};",
        ]
        if path == f"/{BULK_DIR}/$bulk_file":
            lines = [lines[1], "set $bk_unit $bk_bulk_unit;"]
        lines += [
            f"set $bk_key {quoted(f'{prefix}/$bk_base$bk_path')};",
            "if ($bk_base = '') {",
            "    return 418;",
            "}",
        ]
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
        *(f"proxy_hide_header {name};" for name in STORE_HEADERS),
        "proxy_headers_hash_bucket_size 128;",  # the longest name above has 47 bytes
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


def release_map(
    stores: Mapping[str, str],
    common: str,
    build: str,
    catalog: Mapping[str, str] | None = None,
) -> str:
    """The map file of one release: its store -> version map, each group's and category's
    prefix with its version (`catalog`; None for a release of the layout before them, whose
    catalog files are all common) and the common pages', and its build (`$bk_build`, told
    to the live upstream: `live.RELEASE_HEADER`), each key a string whatever it spells
    (`default`, `include`: `syntax.map_key`)."""
    lines = [
        f"    {map_key(key)} {literal(version, f'store {key!r}: version')};"
        for key, version in sorted(stores.items())
    ]
    literal(common, "the common version")  # refused by that name where nginx cannot write it
    base = {"common": f"common/{common}"}
    base |= {unit: f"{unit}/{version}" for unit, version in (catalog or {}).items()}
    units = [
        f"    {map_key(unit)} {literal(prefix, f'{unit!r}: version')};"
        for unit, prefix in sorted(base.items())
    ]
    default = '""' if catalog is not None else literal(base["common"], "the common version")
    return (
        "map $bk_store $bk_version {\n"
        '    default "";\n' + "".join(f"{line}\n" for line in lines) + "}\n"
        f"map $bk_unit $bk_base {{\n    default {default};\n"
        + "".join(f"{line}\n" for line in units)
        + "}\n"
        f"map $host $bk_build {{\n    default {literal(build, 'the build')};\n}}\n"
    )
