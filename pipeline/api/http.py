"""The HTTP around an answer's bytes, alike on every server: validators, compression, caching,
CORS. nginx's configuration is written from these values (`export/nginx/headers.py`) and
`pipeline serve` answers by them as nginx does. (docs/serving.md, "HTTP around the bytes")"""

from __future__ import annotations

import gzip
import hashlib
import os

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
    """Whether an If-None-Match value (its line's, spaces trimmed) names `etag`, read as
    nginx's `ngx_http_test_if_match` reads it (weak): `*` as the whole value; otherwise each
    element in turn, its `W/` dropped, names the ETag when spaces or tabs and then a comma or
    the end follow it; any other element is skipped to its comma, with the commas, spaces and
    tabs after it. The answer is then 304."""
    if header == "*":
        return True
    strong = etag.removeprefix("W/")
    start, end = 0, len(header)
    while start < end:
        if end - start > 2 and header.startswith("W/", start):
            start += 2
        if len(strong) > end - start:
            return False
        if header.startswith(strong, start):
            start += len(strong)
            while start < end and header[start] in " \t":
                start += 1
            if start == end or header[start] == ",":
                return True
        while start < end and header[start] != ",":
            start += 1
        while start < end and header[start] in " \t,":
            start += 1
    return False


def precondition_refused(if_match: str | None, if_unmodified_since: str | None) -> bool:
    """Whether a 200 is 412 for these headers (None: absent), as nginx answers it: a request
    with a value in either goes to the upstream, which ignores both (nginx's map cannot tell
    an empty header from none), but nginx's filter refuses a file or a kept answer to an
    empty one (no entity-tag in the list, no date)."""
    if (if_match or "") + (if_unmodified_since or ""):
        return False
    return if_match is not None or if_unmodified_since is not None


def accepts_gzip(header: str | None) -> bool:
    """Whether an Accept-Encoding value (the first line's) accepts gzip, read as nginx's
    `ngx_http_gzip_ok` reads it: the first `gzip` (any case) that begins the value, follows a
    comma or a space, or follows the last `gzip` that did not, decides. Spaces, then a comma
    or the end, or a `;` with spaces, `q=` and a quality that is not 0 (`_quality`), accept
    it. `*`, `x-gzip` and `gzip2, gzip` do not."""
    value = header or ""
    if value.startswith("gzip,"):
        return True
    lowered, start = value.lower(), 0
    while True:  # nginx searches on after a `gzip` that does not count, from its end
        found = lowered.find("gzip", start)
        if found < 0:
            return False
        if found == start or value[found - 1] in ", ":
            break
        start = found + 4
    rest = value[found + 4 :].lstrip(" ")
    if not rest or rest[0] == ",":
        return True
    if rest[0] != ";":
        return False
    quality = rest[1:].lstrip(" ")
    if not quality:
        return True
    if quality[0] not in "qQ" or len(quality) < 3 or quality[1] != "=":
        return False
    return _quality(quality[2:]) > 0


def _quality(text: str) -> int:
    """nginx's `ngx_http_gzip_quantity`: 0 or 1, then a dot and at most three digits, up to a
    space or a comma; 0 for anything else. nginx adds the digits to 100 times the first rather
    than weighing them, and refuses a sum above 100 (`1.5`): only whether it is 0 matters."""
    if text[0] not in "01":
        return 0
    quality = 100 * int(text[0])
    if len(text) == 1 or text[1] in ", ":
        return quality
    if text[1] != ".":
        return 0
    digits = 0
    for character in text[2:]:
        if character in ", ":
            break
        if not character.isascii() or not character.isdigit():
            return 0
        quality, digits = quality + int(character), digits + 1
    return 0 if quality > 100 or digits > 3 else quality


def compressible(status: int, content_type: str, length: int) -> bool:
    """Whether nginx's gzip filter would compress this answer for a client that accepts it."""
    media_type = content_type.partition(";")[0].strip()
    return status in GZIP_STATUSES and media_type in GZIP_TYPES and length >= GZIP_MIN_LENGTH


def compress(body: bytes) -> bytes:
    """The body gzip-compressed at nginx's level (no name, no time: the same bytes every time)."""
    return gzip.compress(body, GZIP_LEVEL, mtime=0)
