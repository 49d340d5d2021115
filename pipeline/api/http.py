"""The HTTP around an answer's bytes, alike on every server: validators, compression, caching
until the next publish, CORS and its preflight, byte ranges. nginx's configuration is written
from these values (`export/nginx/headers.py`) and `pipeline serve` answers by them as nginx
does. (docs/serving.md, "HTTP around the bytes")"""

from __future__ import annotations

import gzip
import hashlib
import os
from email.utils import formatdate

# On every answer, errors included: a page on another origin may read it, its validator and
# what a range request needs.
CORS = (
    ("Access-Control-Allow-Origin", "*"),
    ("Access-Control-Expose-Headers", "ETag, Content-Range, Accept-Ranges"),
)
# The preflight (OPTIONS, 204): what a page on another origin may send. The headers it asks
# for (`Access-Control-Request-Headers`) are echoed; a browser keeps the answer up to a day.
PREFLIGHT = (
    ("Access-Control-Allow-Methods", "GET, HEAD, POST, OPTIONS"),
    ("Access-Control-Max-Age", "86400"),
)
ALLOW_HEADERS = "Access-Control-Allow-Headers"
# On every 200, 204, 206 and 304 (the statuses nginx's `add_header` and `expires` apply to): a
# cache keeps one entry per encoding.
VARY = ("Vary", "Accept-Encoding")
# Errors are never kept: the next build, or the upstream coming back, may answer otherwise.
NO_STORE = "no-store"
# The statuses whose answer is fresh until the next scheduled publish (`serve.publish_at`).
CACHED_STATUSES = (200, 204, 206, 304)
# Their Cache-Control: `public` (a shared cache may keep an answer to a request with
# Authorization, which every client sends), and with no schedule `no-cache` (every use
# revalidates); with one, nginx's `expires` adds `max-age` and `Expires` (`freshness`).
PUBLIC = "public"
UNSCHEDULED = "public, no-cache"

# What nginx's gzip filter compresses: these statuses, these types, bodies of at least
# GZIP_MIN_LENGTH bytes, to a client that accepts gzip over HTTP/1.1 (`gzip_http_version`).
GZIP_STATUSES = (200, 403, 404)
GZIP_TYPES = ("application/json", "text/html", "text/csv")
GZIP_MIN_LENGTH = 20
# Level 6 (zlib's default): on these pages 12% fewer bytes than level 1 for about a quarter
# more CPU; 9 saves nothing more (docs/serving.md, "Compression, on the fly").
GZIP_LEVEL = 6

# Byte ranges: nginx answers one range of a file (`max_ranges 1`); its largest offset.
MAX_RANGES = 1
MAX_OFFSET = 2**63 - 1
ACCEPT_RANGES = ("Accept-Ranges", "bytes")


def cache_control(status: int, publish_at: str | None) -> str:
    """The Cache-Control nginx's `add_header` gives an answer with `status`: `public`, beside
    `expires`' own, with a publish scheduled at `publish_at`; else `public, no-cache`; never
    kept for an error."""
    if status not in CACHED_STATUSES:
        return NO_STORE
    return UNSCHEDULED if publish_at is None else PUBLIC


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


def next_publish(now: int, publish_at: str) -> int:
    """The next time (seconds since the epoch, UTC) of `publish_at` (HH:MM, UTC) after `now`:
    today's when it is still ahead, else tomorrow's (nginx's `ngx_next_time`, in UTC)."""
    hours, minutes = (int(part) for part in publish_at.split(":"))
    today = now - now % 86400
    at = today + hours * 3600 + minutes * 60
    return at if at > now else at + 86400


def http_date(when: int) -> str:
    """`when` as an HTTP date (`Sun, 06 Nov 1994 08:49:37 GMT`), as nginx writes one."""
    return formatdate(when, usegmt=True)


def freshness(status: int, publish_at: str | None, now: int) -> list[tuple[str, str]]:
    """The caching headers of an answer with `status` sent at `now`, as nginx sends them: with
    a publish scheduled, nginx's `expires @HH:MM` (Expires the next publish, `max-age` the
    seconds until it, both from the second of the Date header) and `public`."""
    headers = [("Cache-Control", cache_control(status, publish_at))]
    if publish_at is None or status not in CACHED_STATUSES:
        return headers
    until = next_publish(now, publish_at)
    return [("Expires", http_date(until)), ("Cache-Control", f"max-age={until - now}"), *headers]


def nginx_time(publish_at: str) -> str:
    """`publish_at` (HH:MM) in nginx's syntax for `expires @...` (`4h30m`)."""
    hours, minutes = (int(part) for part in publish_at.split(":"))
    return f"{hours}h{minutes}m"


class RangeNotSatisfiable(Exception):
    """A Range header nginx answers 416 to."""


def _digits(text: str, at: int) -> tuple[int, int]:
    """The number written at `text[at]` on, and where it ends; RangeNotSatisfiable past nginx's
    largest offset."""
    value = 0
    while at < len(text) and "0" <= text[at] <= "9":
        value = value * 10 + ord(text[at]) - 48
        if value > MAX_OFFSET:
            raise RangeNotSatisfiable(text)
        at += 1
    return value, at


def byte_range(header: str | None, if_range: str | None, etag: str, length: int) -> range | None:
    """The bytes of a body of `length` (its ETag `etag`) that a Range header asks for, as
    nginx's range filter reads it with `max_ranges 1`: one range of `bytes=` (206); None for
    the whole body (no Range, another unit, an If-Range that is not exactly the ETag, several
    ranges, or ranges longer than the body); RangeNotSatisfiable (416) for a range past the
    end, or one nginx cannot read."""
    if header is None or len(header) < 7 or header[:6].lower() != "bytes=":
        return None
    if if_range is not None and not (len(if_range) >= 2 and if_range.endswith('"')):
        return None  # a date: there is no Last-Modified it could be
    if if_range is not None and if_range != etag:
        return None
    text, at, found, size = header[6:], 0, [], 0

    def char(at: int) -> str:
        return text[at] if at < len(text) else ""

    while True:
        while char(at) == " ":
            at += 1
        if char(at) != "-":
            if not "0" <= char(at) <= "9":
                raise RangeNotSatisfiable(header)
            start, at = _digits(text, at)
            while char(at) == " ":
                at += 1
            if char(at) != "-":
                raise RangeNotSatisfiable(header)
            at += 1
            while char(at) == " ":
                at += 1
            suffix, end = False, length
            open_ended = char(at) in (",", "")
        else:
            suffix, start, open_ended = True, 0, False
            at += 1
        if not open_ended:
            if not "0" <= char(at) <= "9":
                raise RangeNotSatisfiable(header)
            end, at = _digits(text, at)
            while char(at) == " ":
                at += 1
            if char(at) not in (",", ""):
                raise RangeNotSatisfiable(header)
            if suffix:
                start, end = (length - end if end < length else 0), length - 1
            end = length if end >= length else end + 1
        if start < end:
            found.append(range(start, end))
            size += end - start
            if len(found) > 1:  # several ranges: the whole body (max_ranges 1)
                return None
        elif start == 0:
            return None
        if char(at) != ",":
            break
        at += 1
    if not found:
        raise RangeNotSatisfiable(header)
    return None if size > length else found[0]


def content_range(part: range, length: int) -> str:
    """The Content-Range of a 206."""
    return f"bytes {part.start}-{part.stop - 1}/{length}"
