"""The HTTP around an answer's bytes, as the generated nginx sends it (`export/nginx/headers.py`):
the ETag and 304, gzip, Cache-Control, CORS. (docs/serving.md, "HTTP around the bytes")"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pipeline.api.http import (
    CORS,
    NO_STORE,
    VARY,
    accepts_gzip,
    body_etag,
    cache_control,
    compress,
    compressible,
    file_etag,
    none_match,
    weak,
)
from pipeline.api.responses import JSON, Response


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


def common(status: int, max_age: int) -> list[tuple[str, str]]:
    """The headers of any answer with `status`: Cache-Control, CORS, and Vary on 200 and 304
    (nginx's `add_header` without `always`)."""
    vary = [VARY] if status in (200, 304) else []
    return [("Cache-Control", cache_control(status, max_age)), *CORS, *vary]


def around(
    response: Response, environ: dict[str, Any], max_age: int
) -> tuple[int, list[tuple[str, str]], bytes]:
    """The status, headers and body sent for `response` to the request of `environ`: a 200
    carries its ETag, and is 304 with no body to an If-None-Match naming it (not with an
    If-Modified-Since beside it: nginx's `if_modified_since off` answers the whole body); the
    body is gzip-compressed where nginx would compress it (the ETag made weak). An answer no
    cache may keep (`Response.store` false: a token) has no ETag and `no-store`."""
    status, body = response.status, response.body
    etag = (response.etag or body_etag(body)) if status == 200 and response.store else None
    if etag is not None:
        asked = environ.get("HTTP_IF_NONE_MATCH")
        if (
            asked is not None
            and "HTTP_IF_MODIFIED_SINCE" not in environ
            and none_match(asked, etag)
        ):
            return 304, [("ETag", etag), *common(304, max_age)], b""
    headers = [("Content-Type", response.content_type)]
    if (
        compressible(status, response.content_type, len(body))
        and accepts_gzip(environ.get("HTTP_ACCEPT_ENCODING"))
        and environ.get("SERVER_PROTOCOL") != "HTTP/1.0"
    ):
        body, etag = compress(body), weak(etag) if etag else None
        headers.append(("Content-Encoding", "gzip"))
    headers.append(("Content-Length", str(len(body))))
    if etag is not None:
        headers.append(("ETag", etag))
    around_it = common(status, max_age)
    if not response.store:  # kept by no cache: `no-store`, whatever the status
        around_it = [(n, NO_STORE if n == "Cache-Control" else v) for n, v in around_it]
    return status, headers + around_it, body
