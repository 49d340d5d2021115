"""Answers to a `POST` of a search (docs/contract.md §12), live from the warehouse: the
catalog's search (product ids) and a store's search (the summary of its products that match),
each kept by no cache: no ETag, `Cache-Control: no-store`, conditional headers ignored."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from typing import Protocol

import duckdb

from pipeline.api.catalog import parse_ids
from pipeline.api.params import DEFAULTS, PARAMETER_NAMES, parse_inventory_params, used
from pipeline.api.responses import (
    NO_CATEGORIES,
    NO_PRODUCTS,
    NO_STORES,
    ApiError,
    Response,
    envelope,
)
from pipeline.api.search import SUMMARY_SORTS, PostOperation, SearchBody, parse_body
from pipeline.api.urls import STORE_KEY
from pipeline.db import scalar
from pipeline.serve import live
from pipeline.serve.cache import AnswerCache
from pipeline.transform.steps import CATALOG_SEARCH


def _category_id(segment: str, errors: list[str]) -> int | None:
    try:
        return parse_ids("categoryId", segment)[0]
    except ApiError as exc:
        errors += exc.messages
        return None


class Posted(Protocol):
    """The POST (`serve.posts.Post`): its path's match, whose groups are the path's segments,
    its query string and its body."""

    @property
    def path(self) -> re.Match[str]: ...
    @property
    def query(self) -> str: ...
    @property
    def body(self) -> bytes: ...


def answer(
    op: PostOperation,
    post: Posted,
    warehouse: Callable[[], duckdb.DuckDBPyConnection],
    cache: AnswerCache | None = None,
) -> Response:
    """The answer to a `POST` of the search `op`, errors included: kept by no cache (no ETag,
    `no-store`, conditional headers ignored: `Response.store`)."""
    try:
        answered = _answer(op, post.path.groups(), post.query, post.body, warehouse, cache)
    except ApiError as exc:
        answered = exc.response()
    return replace(answered, store=False)


def _answer(
    op: PostOperation,
    segments: tuple[str, ...],
    query: str,
    body: bytes,
    warehouse: Callable[[], duckdb.DuckDBPyConnection],
    cache: AnswerCache | None,
) -> Response:
    """Every 400 (the path's, the query's, the body's, in that order) before any 404."""
    errors: list[str] = []
    category_id = _category_id(segments[-1], errors)
    params = DEFAULTS
    try:
        # Its errors in §4's order (the summary's), not the official document's
        params = parse_inventory_params(query, [n for n in PARAMETER_NAMES if n in op.parameters])
    except ApiError as exc:
        errors += exc.messages
    search, body_errors = parse_body(body)
    errors += body_errors
    if errors or search is None or category_id is None:
        raise ApiError(400, errors)
    if op.name == "catalog_search":
        return Response(200, catalog_search(warehouse(), category_id, search))
    key = segments[0].lower()
    if not STORE_KEY.fullmatch(key):
        raise ApiError(404, [NO_STORES])
    summary = replace(
        params,
        categoryId=category_id,
        sort=SUMMARY_SORTS[search.sort],
        offset=search.offset,
        limit=search.limit,
    )
    found = live.store_inventory(warehouse(), key, summary, cache, search.filters_json())
    return Response(200, found)


def catalog_search(con: duckdb.DuckDBPyConnection, category_id: int, search: SearchBody) -> bytes:
    """The page of product ids, or ApiError(404): no such category, or nothing on the page."""
    sql = CATALOG_SEARCH.sql
    values = {
        "category_id": category_id,
        "search_filters": search.filters_json(),
        "sort": search.sort,
        "limit": search.limit,
        "offset": search.offset,
    }
    rows = con.execute(sql, used(sql, values)).fetchall()
    if rows:
        return envelope(rows[0][0], (str(product_id) for _, product_id in rows))
    known = "SELECT count(*) FROM staging.categories WHERE category_id = ?"
    if not scalar(con, known, [category_id]):
        raise ApiError(404, [NO_CATEGORIES])
    raise ApiError(404, [NO_PRODUCTS])
