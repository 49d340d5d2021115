"""A request target -> the API's response: a materialised page read from its file, anything
else answered live from the warehouse, with the same bytes (DESIGN §3)."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote

import duckdb

from pipeline.api import urls
from pipeline.api.docs import help_page, openapi_json
from pipeline.api.params import PAGING, parse_inventory_params
from pipeline.api.responses import (
    HTML,
    MALFORMED,
    NO_STORES,
    TOO_LONG,
    URL_NOT_FOUND,
    ApiError,
    Response,
)
from pipeline.serve import live


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except OSError:  # e.g. a name longer than the file system allows: never materialised
        return False


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


def answer(con: duckdb.DuckDBPyConnection, target: str, site: Path | None = None) -> Response:
    """The API's response to `GET target` (a path with its query string, path not yet
    percent-decoded). With `site`, a materialised page is read from its file; anything else is
    computed from the warehouse, with the same bytes."""
    path, _, query = target.partition("?")
    try:
        if len(target) > urls.MAX_TARGET:
            raise ApiError(414, [TOO_LONG])
        path = normalize_path(unquote(path))
        if len(path) > 1:
            path = path.rstrip("/")  # a trailing slash names the same resource
        match = urls.INVENTORY_PATH.fullmatch(path)
        if match:
            params = parse_inventory_params(query)  # 400s are decided before the store lookup
            key = match.group(1)
            if not urls.STORE_KEY.fullmatch(key):
                raise ApiError(404, [NO_STORES])
            page = site / urls.inventory_page_path(key, params) if site else None
            if page is not None and _is_file(page):
                return Response(200, page.read_bytes())
            return Response(200, live.store_inventory(con, key, params))
        if path == urls.CATEGORIES_PATH:
            params = parse_inventory_params(query, PAGING)
            page = site / urls.categories_page_path(params.offset, params.limit) if site else None
            if page is not None and page.is_file():
                return Response(200, page.read_bytes())
            return Response(200, live.categories_page(con, params.offset, params.limit))
        if path == urls.HELP_PATH:
            return Response(200, help_page().encode(), HTML)
        if path == urls.OPENAPI_PATH:
            return Response(200, openapi_json())
        raise ApiError(404, [URL_NOT_FOUND])
    except ApiError as exc:
        return exc.response()
