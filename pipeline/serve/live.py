"""Live answers from the published warehouse: the same SQL and bytes the exporter uses."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NoReturn

import duckdb

from pipeline.api.params import InventoryParams, bind_params, category_params, used
from pipeline.api.responses import NO_CATEGORIES, NO_PRODUCTS, NO_STORES, ApiError, envelope
from pipeline.db import scalar
from pipeline.serve.cache import Answer, AnswerCache, whole
from pipeline.transform.steps import CATALOG_CATEGORIES, STORE_INVENTORY


def store_exists(con: duckdb.DuckDBPyConnection, store_key: str) -> bool:
    return bool(scalar(con, "SELECT count(*) FROM marts.store WHERE store_key = ?", [store_key]))


def store_inventory(
    con: duckdb.DuckDBPyConnection,
    store_key: str,
    params: InventoryParams,
    cache: AnswerCache | None = None,
) -> bytes:
    """The page of GET /v1.39.0/stores/{storeKey}/inventory/products, or ApiError(404)."""
    key = store_key.lower()
    total, results = answered(con, STORE_INVENTORY.sql, "product_json", key, None, params, cache)
    if not results:
        raise_not_found(con, key)
    return envelope(total, results)


def answered(
    con: duckdb.DuckDBPyConnection,
    sql: str,
    column: str,
    store_key: str,
    product_id: int | None,
    params: InventoryParams,
    cache: AnswerCache | None,
) -> tuple[int, Sequence[str | bytes]]:
    """(total_items, the page's result objects) of a store operation's SQL for a request:
    with a cache that keeps the store's answers whole, a slice of the combination's whole
    answer (asked once, then kept: `cache`); else the page alone."""
    if cache is None or not cache.holds_store(store_key, lambda: store_sizes(con)):
        return _rows(con, sql, column, store_key, product_id, params)
    key = (sql, store_key, product_id, whole(params))
    found = cache.get(key)
    if found is None:
        total, results = _rows(con, sql, column, store_key, product_id, whole(params))
        found = Answer(total, tuple(r.encode() for r in results))
        cache.put(key, found)
    return found.total, found.page(params)


def _rows(
    con: duckdb.DuckDBPyConnection,
    sql: str,
    column: str,
    store_key: str,
    product_id: int | None,
    params: InventoryParams,
) -> tuple[int, list[str]]:
    result = con.execute(sql, used(sql, bind_params(params, [store_key], product_id)))
    names = [d[0] for d in result.description]
    total, json = names.index("total_items"), names.index(column)
    rows = result.fetchall()
    return (rows[0][total] if rows else 0), [row[json] for row in rows]


def store_sizes(con: duckdb.DuckDBPyConnection) -> dict[str, int]:
    """Listings by store (`marts.store`)."""
    return dict(con.execute("SELECT store_key, listing_count FROM marts.store").fetchall())


def raise_not_found(con: duckdb.DuckDBPyConnection, store_key: str) -> NoReturn:
    """The 404 of an empty answer: no such store, or none of its products matched. Asked only
    when the answer is empty: a store with an answer exists (one query fewer per request)."""
    raise ApiError(404, [NO_PRODUCTS if store_exists(con, store_key) else NO_STORES])


def categories_page(con: duckdb.DuckDBPyConnection, params: InventoryParams) -> bytes:
    """The page of GET /v1.39.0/catalog/categories, or ApiError(404)."""
    rows = con.execute(CATALOG_CATEGORIES.sql, category_params(params)).fetchall()
    if not rows:
        raise ApiError(404, [NO_CATEGORIES])
    return envelope(rows[0][2], (r[3] for r in rows))
