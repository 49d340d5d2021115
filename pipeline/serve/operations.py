"""Answers of the store's other inventory operations (docs/contract.md §5): a materialised page from
its file, anything else from the warehouse by the operation's SQL file."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import duckdb

from pipeline.api.operations import Operation, page_path, parse_product_id
from pipeline.api.params import InventoryParams, invalid_value, parse_after_path
from pipeline.api.responses import (
    NO_STORES,
    ApiError,
    Response,
    envelope,
    results_envelope,
)
from pipeline.api.urls import STORE_KEY
from pipeline.serve.cache import WHOLE, AnswerCache
from pipeline.serve.headers import page as read_page
from pipeline.serve.live import answered, raise_not_found
from pipeline.transform.steps import OPERATION_SQL


def parse(op: Operation, segment: str | None, query: str) -> tuple[int | None, InventoryParams]:
    """The productId and the query's parameters, or ApiError(400) naming every bad one (the
    path's productId first)."""
    product_id = parse_product_id(segment)
    errors = (
        [] if segment is None or product_id is not None else [invalid_value("productId", segment)]
    )
    return product_id, parse_after_path(errors, query, op.parameters)


def live_answer(
    con: duckdb.DuckDBPyConnection,
    op: Operation,
    store_key: str,
    product_id: int | None,
    params: InventoryParams,
    cache: AnswerCache | None = None,
) -> bytes:
    """The operation's answer from the warehouse, or ApiError(404)."""
    key = store_key.lower()
    if not op.paged:  # one result: the whole answer is the page
        params = replace(params, offset=0, limit=WHOLE)
    total, results = answered(con, OPERATION_SQL[op], "result_json", key, product_id, params, cache)
    if not results:
        raise_not_found(con, key)
    if not op.paged:
        return results_envelope(results)
    return envelope(total, results)


def answer(
    warehouse: Callable[[], duckdb.DuckDBPyConnection],
    site: Path | None,
    op: Operation,
    store_key: str,
    segment: str | None,
    query: str,
    cache: AnswerCache | None = None,
) -> Response:
    """The response to a request of the operation: 400s before the store is looked up."""
    product_id, params = parse(op, segment, query)
    if not STORE_KEY.fullmatch(store_key):
        raise ApiError(404, [NO_STORES])
    if site is not None and op.materialised:
        found = read_page(site / page_path(op, store_key, params))
        if found is not None:
            return found
    return Response(200, live_answer(warehouse(), op, store_key, product_id, params, cache))
