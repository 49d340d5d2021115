"""A request target -> the API's response: a materialised page read from its file, anything
else answered live from the warehouse, with the same bytes (docs/contract.md)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from urllib.parse import unquote

import duckdb

from pipeline.api import catalog, operations, urls
from pipeline.api.docs import help_page
from pipeline.api.openapi import openapi_json
from pipeline.api.params import CATEGORY_PARAMETERS, parse_inventory_params
from pipeline.api.responses import (
    HTML,
    MALFORMED,
    NO_STORES,
    TOO_LONG,
    URL_NOT_FOUND,
    ApiError,
    Response,
    content_type,
)
from pipeline.serve import catalog as catalog_operations
from pipeline.serve import live
from pipeline.serve import operations as store_operations
from pipeline.serve.cache import AnswerCache
from pipeline.serve.headers import page as read_page

# A warehouse connection, or what opens one when a live answer needs it (ApiError(503) when it
# cannot be opened): files and the help pages never wait on the warehouse.
Warehouse = duckdb.DuckDBPyConnection | Callable[[], duckdb.DuckDBPyConnection]

# The scheme and authority of an absolute-form target (`GET http://host/path HTTP/1.1`).
ABSOLUTE_FORM = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^/?#]*")
# What nginx refuses in a path (400): a `%` not followed by two hex digits, an encoded NUL.
BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})|%00")


def origin_form(target: str) -> str:
    """The request target as a path and query string. An absolute-form target (as sent to a
    proxy) is read as its path and query, as nginx does; any other target that does not start
    with `/` is malformed."""
    absolute = ABSOLUTE_FORM.match(target)
    if absolute:
        rest = target[absolute.end() :]
        return rest if rest.startswith("/") else f"/{rest}"
    if not target.startswith("/"):
        raise ApiError(400, [MALFORMED])
    return target


def normalize_path(path: str) -> str:
    """A decoded path as nginx sees it: repeated slashes merged, `.` and `..` segments resolved;
    a `..` above the root is a malformed request."""
    segments: list[str] = []
    for segment in path.split("/")[1:]:
        if segment == "..":
            if not segments:
                raise ApiError(400, [MALFORMED])
            segments.pop()
        elif segment not in ("", "."):
            segments.append(segment)
    trailing = "/" if path.endswith("/") and segments else ""
    return "/" + "/".join(segments) + trailing


def request_path(target: str) -> tuple[str, str]:
    """The decoded, normalised path of a request target and its query string, as nginx reads
    them before any location; ApiError for what nginx refuses there (400, 414)."""
    target = origin_form(target)
    too_long = len(target) > urls.MAX_TARGET  # the fragment counts, as in nginx's $request_uri
    # A fragment (`#...`, which a client should not send) is dropped, with any query string
    # after it, as nginx drops it.
    path, _, query = target.partition("#")[0].partition("?")
    if BAD_ESCAPE.search(path):  # nginx finds these reading the request line, before a 414
        raise ApiError(400, [MALFORMED])
    if too_long:
        raise ApiError(414, [TOO_LONG])
    path = normalize_path(unquote(path))
    if len(path) > 1:
        path = path.rstrip("/")  # a trailing slash names the same resource
    return path, query


def answer(
    con: Warehouse, target: str, site: Path | None = None, cache: AnswerCache | None = None
) -> Response:
    """The API's response to `GET target` (as the request line sends it: a path with its query
    string, not yet percent-decoded, or an absolute URL). With `site`, a materialised page is
    read from its file; anything else is computed from the warehouse, with the same bytes (with
    `cache`, a small store's page is a slice of its combination's whole answer: `cache`)."""

    def warehouse() -> duckdb.DuckDBPyConnection:
        return con if isinstance(con, duckdb.DuckDBPyConnection) else con()

    try:
        path, query = request_path(target)
        match = urls.INVENTORY_PATH.fullmatch(path)
        if match:
            params = parse_inventory_params(query)  # 400s are decided before the store lookup
            key = match.group(1)
            if not urls.STORE_KEY.fullmatch(key):
                raise ApiError(404, [NO_STORES])
            file = read_page(site / urls.inventory_page_path(key, params)) if site else None
            if file is not None:
                return file
            return Response(200, live.store_inventory(warehouse(), key, params, cache))
        operation = operations.match(path)
        if operation is not None:
            return store_operations.answer(warehouse, site, *operation, query, cache)
        if path == urls.CATEGORIES_PATH:
            params = parse_inventory_params(query, CATEGORY_PARAMETERS)
            file = read_page(site / urls.categories_page_path(params)) if site else None
            if file is not None:
                return file
            return Response(200, live.categories_page(warehouse(), params))
        found = catalog.match(path)
        if found is not None:
            return catalog_operations.answer(warehouse, site, *found, query)
        bulk = urls.BULK_PATH.fullmatch(path)
        if bulk:  # a file or nothing: no bulk file is answered live
            name = bulk.group(1)
            file = read_page(site / name, content_type(name)) if site else None
            if file is None:
                raise ApiError(404, [URL_NOT_FOUND])
            return file
        # The help pages are the build's files where there is a site (their ETag is the file's),
        # else computed: the same bytes.
        if path == urls.HELP_PATH:
            file = read_page(site / urls.HELP_FILE, HTML) if site else None
            return file or Response(200, help_page().encode(), HTML)
        if path == urls.OPENAPI_PATH:
            file = read_page(site / urls.OPENAPI_FILE) if site else None
            return file or Response(200, openapi_json())
        raise ApiError(404, [URL_NOT_FOUND])
    except ApiError as exc:
        return exc.response()
