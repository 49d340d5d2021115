"""The HTTP around an answer's bytes, alike on every server: validators, compression, caching,
CORS. nginx's configuration is written from these values (`export/nginx/headers.py`) and
`pipeline serve` answers by them as nginx does. (docs/serving.md, "HTTP around the bytes")"""

from __future__ import annotations

import gzip
import hashlib
import os
import re

# On every answer, errors included: a page on another origin may read it and its validator.
CORS = (("Access-Control-Allow-Origin", "*"), ("Access-Control-Expose-Headers", "ETag"))
# On every 200 and 304: a cache keeps one entry per encoding.
VARY = ("Vary", "Accept-Encoding")
# Errors are never kept: the next build, or the upstream coming back, may answer otherwise.
NO_STORE = "no-store"
# The statuses whose answer may be kept until the next build (`serve.max_age`).
CACHED_STATUSES = (200, 304)

# What nginx's gzip filter compresses: these statuses, these types, bodies of at least
# GZIP_MIN_LENGTH bytes, to a client that accepts gzip over HTTP/1.1 (`gzip_http_version`).
GZIP_STATUSES = (200, 403, 404)
GZIP_TYPES = ("application/json", "text/html", "text/csv")
GZIP_MIN_LENGTH = 20
# Level 6 (zlib's default): on these pages 12% fewer bytes than level 1 for about a quarter
# more CPU; 9 saves nothing more (docs/serving.md, "Compression, on the fly").
GZIP_LEVEL = 6

# One entity-tag of an If-None-Match list, weak or strong, or `*`.
_ENTITY_TAG = re.compile(r'\s*(?:W/)?("[^"]*"|\*)\s*(?:,|$)')


def cache_control(status: int, max_age: int) -> str:
    """The Cache-Control of an answer with `status`: kept `max_age` seconds, or never."""
    return f"public, max-age={max_age}" if status in CACHED_STATUSES else NO_STORE


def file_etag(stat: os.stat_result) -> str:
    """nginx's entity-tag of a file: its mtime (whole seconds) and size, in hex."""
    return f'"{int(stat.st_mtime):x}-{stat.st_size:x}"'


def body_etag(body: bytes) -> str:
    """The entity-tag of an answer computed per request: a hash of its bytes."""
    return '"' + hashlib.sha256(body).hexdigest()[:32] + '"'


def weak(etag: str) -> str:
    """The entity-tag of the same answer compressed, as nginx's gzip filter makes it."""
    return etag if etag.startswith("W/") else f"W/{etag}"


def none_match(header: str, etag: str) -> bool:
    """Whether an If-None-Match header names `etag` (weak comparison, as nginx does), or is
    `*`: the answer is then 304."""
    strong = etag.removeprefix("W/")
    position = 0
    while position < len(header):
        found = _ENTITY_TAG.match(header, position)
        if found is None:
            return False
        if found.group(1) in ("*", strong):
            return True
        position = found.end()
    return False


def accepts_gzip(header: str | None) -> bool:
    """Whether an Accept-Encoding header accepts gzip: the coding named, without `q=0`."""
    for coding in (header or "").split(","):
        name, _, params = coding.partition(";")
        if name.strip().lower() != "gzip":
            continue
        quality = params.strip().lower().removeprefix("q=").strip() if params.strip() else "1"
        try:
            return float(quality) > 0
        except ValueError:
            return False
    return False


def compressible(status: int, content_type: str, length: int) -> bool:
    """Whether nginx's gzip filter would compress this answer for a client that accepts it."""
    media_type = content_type.partition(";")[0].strip()
    return status in GZIP_STATUSES and media_type in GZIP_TYPES and length >= GZIP_MIN_LENGTH


def compress(body: bytes) -> bytes:
    """The body gzip-compressed at nginx's level (no name, no time: the same bytes every time)."""
    return gzip.compress(body, GZIP_LEVEL, mtime=0)
