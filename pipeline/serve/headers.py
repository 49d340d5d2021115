"""The HTTP around an answer's bytes, as the generated nginx sends it (`export/nginx/headers.py`):
the ETag and 304, gzip, Cache-Control and Expires, CORS and its preflight, byte ranges.
(docs/serving.md, "HTTP around the bytes")"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from pipeline.api.http import (
    ACCEPT_RANGES,
    ALLOW_HEADERS,
    CACHED_STATUSES,
    CORS,
    NO_STORE,
    PREFLIGHT,
    VARY,
    RangeNotSatisfiable,
    accepts_gzip,
    body_etag,
    byte_range,
    compress,
    compressible,
    content_range,
    file_etag,
    freshness,
    http_date,
    none_match,
    precondition_refused,
    weak,
)
from pipeline.api.responses import (
    HTML,
    JSON,
    RANGE_NOT_SATISFIABLE,
    Response,
    error_body,
    nginx_page,
)


def page(path: Path, content_type: str = JSON) -> Response | None:
    """A materialised page read from its file, with nginx's ETag of it (from the same open
    file: a release never rewrites a page, but a read and a stat apart could straddle two);
    None where there is no such file."""
    try:  # a name longer than the file system allows (a request's own query) is no page
        with path.open("rb") as file:
            stat = os.fstat(file.fileno())
            body = file.read()
    except OSError:
        return None
    return Response(200, body, content_type, file_etag(stat))


def common(status: int, publish_at: str | None, now: int) -> list[tuple[str, str]]:
    """The headers of any answer with `status` sent at `now`: Date, the caching headers
    (`freshness`), CORS, and Vary on 200, 204, 206 and 304 (nginx's `add_header` without
    `always`). The Date is the second freshness counts from, as nginx's is."""
    vary = [VARY] if status in CACHED_STATUSES else []
    return [("Date", http_date(now)), *freshness(status, publish_at, now), *CORS, *vary]


def preflight(environ: dict[str, Any]) -> list[tuple[str, str]]:
    """The headers of a CORS preflight's 204 beside `common`'s: the methods, the request's
    headers echoed (none where it asks for none), how long a browser may keep it."""
    asked = environ.get("HTTP_ACCESS_CONTROL_REQUEST_HEADERS", "")
    return [*PREFLIGHT, *([(ALLOW_HEADERS, asked)] if asked else [])]


def around(
    response: Response, environ: dict[str, Any], publish_at: str | None
) -> tuple[int, list[tuple[str, str]], bytes]:
    """The status, headers and body sent for `response` to the request of `environ`: a 200
    carries its ETag, and is 304 with no body to an If-None-Match naming it (not with an
    If-Modified-Since beside it: nginx's `if_modified_since off` answers the whole body); the
    body is gzip-compressed where nginx would compress it (the ETag made weak); else a file's
    200 answers one byte range (`ranged`). A 204 (a preflight) has no body and no type. An
    answer no cache may keep (`Response.store` false: a token) has no ETag and `no-store`. An
    empty If-Match or If-Unmodified-Since makes a 200 nginx's own 412, as nginx's filter does."""
    now = int(time.time())
    if (
        response.status == 200
        and response.store
        and environ.get("REQUEST_METHOD") in ("GET", "HEAD")  # a POST's is no cache's: not refused
        and precondition_refused(
            environ.get("HTTP_IF_MATCH"), environ.get("HTTP_IF_UNMODIFIED_SINCE")
        )
    ):
        response = Response(412, nginx_page(412), HTML)
    status, body = response.status, response.body
    if status == 204:
        return 204, common(204, publish_at, now), b""
    etag = (response.etag or body_etag(body)) if status == 200 and response.store else None
    if etag is not None:
        asked = environ.get("HTTP_IF_NONE_MATCH")
        if (
            asked is not None
            and "HTTP_IF_MODIFIED_SINCE" not in environ
            and none_match(asked, etag)
        ):
            return 304, [("ETag", etag), *common(304, publish_at, now)], b""
    headers = [("Content-Type", response.content_type)]
    if (
        compressible(status, response.content_type, len(body))
        and accepts_gzip(environ.get("HTTP_ACCEPT_ENCODING"))
        and environ.get("SERVER_PROTOCOL") != "HTTP/1.0"
    ):
        body, etag = compress(body), weak(etag) if etag else None
        headers.append(("Content-Encoding", "gzip"))
    elif status == 200 and response.etag is not None:  # a file: nginx's static handler
        return ranged(response, environ, publish_at, now)
    headers.append(("Content-Length", str(len(body))))
    if etag is not None:
        headers.append(("ETag", etag))
    if not response.store:  # kept by no cache: `no-store` alone, as nginx's `expires off`
        return status, headers + kept_by_none(status, now), body
    return status, headers + common(status, publish_at, now), body


def kept_by_none(status: int, now: int) -> list[tuple[str, str]]:
    """`common`'s headers for an answer no cache may keep, whatever its status: `no-store`, no
    Expires."""
    vary = [VARY] if status in CACHED_STATUSES else []
    return [("Date", http_date(now)), ("Cache-Control", NO_STORE), *CORS, *vary]


def ranged(
    response: Response, environ: dict[str, Any], publish_at: str | None, now: int
) -> tuple[int, list[tuple[str, str]], bytes]:
    """A file's 200 as nginx's range filter sends it, after its headers filter: one range
    asked is 206 with its Content-Range; none, or one declined, the whole body with
    Accept-Ranges; a range it cannot satisfy is 416 with the error envelope, keeping the
    headers nginx had added for the 200 (not the ETag), and `no-store` after them."""
    body, etag = response.body, str(response.etag)
    try:
        part = byte_range(environ.get("HTTP_RANGE"), environ.get("HTTP_IF_RANGE"), etag, len(body))
    except RangeNotSatisfiable:
        error = error_body([RANGE_NOT_SATISFIABLE])
        charset = (
            ";" + response.content_type.partition(";")[2] if ";" in response.content_type else ""
        )
        return (
            416,
            [
                # The envelope's type with the file's charset (nginx's charset filter saw the
                # 200's type, and its charset stays): none for a Parquet file.
                ("Content-Type", JSON.partition(";")[0] + charset),
                ("Content-Length", str(len(error))),
                *common(200, publish_at, now),
                ("Content-Range", f"bytes */{len(body)}"),
                ("Cache-Control", NO_STORE),
            ],
            error,
        )
    headers = [("Content-Type", response.content_type), ("ETag", etag)]
    if part is None:
        headers += [("Content-Length", str(len(body))), ACCEPT_RANGES]
        return 200, headers + common(200, publish_at, now), body
    headers += [
        ("Content-Length", str(len(part))),
        ("Content-Range", content_range(part, len(body))),
    ]
    return 206, headers + common(206, publish_at, now), body[part.start : part.stop]
