"""Response bytes and messages: the paged envelope (spec 2.1), the error envelope, and every
error message the API, the live server and the nginx configuration answer with."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from http import HTTPStatus

import orjson
import polars as pl

JSON = "application/json; charset=utf-8"
HTML = "text/html; charset=utf-8"
CSV = "text/csv; charset=utf-8"
PARQUET = "application/vnd.apache.parquet"
# The content type of a site file, by the end of its name (a page's is JSON).
CONTENT_TYPES = {".html": HTML, ".csv": CSV, ".parquet": PARQUET, ".json": JSON}


def content_type(name: str) -> str:
    """The content type a site file at `name` is served with, by every server and the bucket."""
    return next((t for end, t in CONTENT_TYPES.items() if name.endswith(end)), JSON)


NO_STORES = "No stores were found."
NO_PRODUCTS = "No products were found."
NO_CATEGORIES = "No categories were found."
URL_NOT_FOUND = "URL not found."
MALFORMED = "The request is malformed."
TOO_LONG = "The request URL is too long."
# 416, to a Range past a file's end: the envelope nginx answers with too (not a message of the
# API's live service, which answers no ranges).
RANGE_NOT_SATISFIABLE = "The requested range is not satisfiable."
NOT_UTF8 = "The query string is not valid UTF-8 after percent-decoding."
UNAVAILABLE = "The service is unavailable."
BODY_TOO_LARGE = "The request body is too large."
HEADERS_TOO_LARGE = "The request headers are too large."
NOT_IMPLEMENTED = "The request's transfer encoding is not supported."
VERSION_NOT_SUPPORTED = "The request's HTTP version is not supported."
INTERNAL_ERROR = "An error has occurred."
ALLOWED_METHODS = ("GET", "HEAD", "OPTIONS")

# The message of each error the servers answer before (or without) routing a request: a request
# nginx or waitress refuses while reading it, a failed upstream, a warehouse that cannot be
# opened, an HTTP version other than 1.x (505). nginx's 494 (a header line or the whole head
# too large) is answered as 431.
STATUS_MESSAGES = {
    400: MALFORMED,
    413: BODY_TOO_LARGE,
    414: TOO_LONG,
    431: HEADERS_TOO_LARGE,
    500: INTERNAL_ERROR,
    501: NOT_IMPLEMENTED,
    503: UNAVAILABLE,
    505: VERSION_NOT_SUPPORTED,
}


def nginx_page(status: int) -> bytes:
    """nginx's own page for an error it answers with no `error_page` (`server_tokens off`):
    the 412 of an empty If-Match or If-Unmodified-Since (`api.http.precondition_refused`).
    An `error_page` for it would hang the client's connection after a live answer nginx had
    not kept yet, so both servers send this page."""
    title = f"{status} {HTTPStatus(status).phrase}"
    lines = ["<html>", f"<head><title>{title}</title></head>", "<body>"]
    lines += [f"<center><h1>{title}</h1></center>", "<hr><center>nginx</center>", "</body>"]
    return "".join(f"{line}\r\n" for line in [*lines, "</html>"]).encode()


def method_not_allowed(method: str) -> str:
    """The 405 message, as ASP.NET words it (nginx fills in `$request_method`)."""
    return f"The requested resource does not support http method '{method}'."


@dataclass(frozen=True)
class Response:
    status: int
    body: bytes
    content_type: str = JSON
    # A file's validator (`http.file_etag`); None: a hash of the bytes, for a 200.
    etag: str | None = None
    # False: an answer no cache may keep or revalidate (a token): no ETag, `no-store`.
    store: bool = True


class ApiError(Exception):
    def __init__(self, status: int, messages: Sequence[str]) -> None:
        super().__init__("; ".join(messages))
        self.status = status
        self.messages = list(messages)

    def response(self) -> Response:
        return Response(self.status, error_body(self.messages))


def error_body(messages: Iterable[str]) -> bytes:
    return b'{"success":false,"errors":' + orjson.dumps(list(messages)) + b',"results":[]}'


_ENVELOPE = ('{"totalItems":', ',"success":true,"errors":[],"results":[', "]}")


def envelope(total_items: int, results: Iterable[str | bytes]) -> bytes:
    """The paged envelope (spec 2.1) around ready-made result objects, compact, no newline."""
    items = [r.encode() if isinstance(r, str) else r for r in results]
    head, middle, tail = (part.encode() for part in _ENVELOPE)
    return head + b"%d" % total_items + middle + b",".join(items) + tail


def results_envelope(results: Iterable[str | bytes], errors: Sequence[str] = ()) -> bytes:
    """The envelope of an answer with no totalItems (one result, a whole list, or the ids found
    of a list with an error for each id not found), compact."""
    items = [r.encode() if isinstance(r, str) else r for r in results]
    head = b'{"success":true,"errors":' + orjson.dumps(list(errors)) + b',"results":['
    return head + b",".join(items) + b"]}"


def envelope_expr(total_items: pl.Expr, results: pl.Expr) -> pl.Expr:
    """`envelope` as a polars expression: `results` is the page's result objects joined by
    commas."""
    head, middle, tail = _ENVELOPE
    return pl.concat_str(
        pl.lit(head), total_items.cast(pl.String), pl.lit(middle), results, pl.lit(tail)
    )
