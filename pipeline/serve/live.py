"""Live answers from the published warehouse: the same SQL and bytes the exporter uses."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import NoReturn

import duckdb

from pipeline.api.params import DEFAULTS, InventoryParams, bind_params, category_params, used
from pipeline.api.responses import NO_CATEGORIES, NO_PRODUCTS, NO_STORES, ApiError, envelope
from pipeline.db import scalar
from pipeline.serve.cache import Answer, AnswerCache, Products, whole
from pipeline.transform.steps import CATALOG_CATEGORIES, STORE_INVENTORY, STORE_INVENTORY_KEPT

# The columns of a store's kept products: what `store_inventory_page` cuts a page by, and the
# product's JSON.
KEPT_COLUMNS = (
    "store_key",
    "channel_id",
    "product_id",
    "category_id",
    "group_id",
    "is_excluded_category",
    "lowest_price",
    "name_key",
    "category_name_key",
    "group_name_key",
    "product_json",
)


def store_exists(con: duckdb.DuckDBPyConnection, store_key: str) -> bool:
    return bool(scalar(con, "SELECT count(*) FROM marts.store WHERE store_key = ?", [store_key]))


def store_inventory(
    con: duckdb.DuckDBPyConnection,
    store_key: str,
    params: InventoryParams,
    cache: AnswerCache | None = None,
) -> bytes:
    """The page of GET /v1.39.0/stores/{storeKey}/inventory/products, or ApiError(404): cut
    from the store's products kept for the channel and the listing flags where the cache keeps
    the store, else asked for alone."""
    key = store_key.lower()
    kept = None
    if cache is not None and cache.holds_store(key, lambda: store_sizes(con)):
        flags = (params.channelId, params.includeGeneric, params.includeCustom, params.skuLimit)
        kept = cache.kept((STORE_INVENTORY_KEPT, key, flags), lambda: _products(con, key, params))
    if kept is None:
        total, results = _rows(con, STORE_INVENTORY.sql, "product_json", key, None, params)
    else:
        total, results = _cut(con, kept, params)
    if not results:
        raise_not_found(con, key)
    return envelope(total, results)


def _products(con: duckdb.DuckDBPyConnection, store_key: str, params: InventoryParams) -> Products:
    """The store's whole summary answer for the request's channel and listing flags: every
    product, excluded categories too, no filter or bound, with the keys a page is cut by."""
    every = replace(
        DEFAULTS,
        channelId=params.channelId,
        includeGeneric=params.includeGeneric,
        includeCustom=params.includeCustom,
        skuLimit=params.skuLimit,
        includeExcludedCategories=True,
    )
    sql = STORE_INVENTORY.sql
    bind = used(sql, bind_params(every, [store_key]))
    bind.update(first_position=None, last_position=None)
    return Products(con.sql(sql, params=bind).select(*KEPT_COLUMNS).to_arrow_table())


def _cut(
    con: duckdb.DuckDBPyConnection, kept: Products, params: InventoryParams
) -> tuple[int, list[str]]:
    """The page cut from a store's kept products by `store_inventory_kept`."""
    sql = STORE_INVENTORY_KEPT.sql
    con.register("kept_products", kept.table)
    try:
        rows = con.execute(sql, used(sql, bind_params(params, None))).fetchall()
    finally:
        con.unregister("kept_products")
    return (rows[0][0] if rows else 0), [row[1] for row in rows]


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
    found = None
    if cache is not None and cache.holds_store(store_key, lambda: store_sizes(con)):

        def ask() -> Answer:
            total, results = _rows(con, sql, column, store_key, product_id, whole(params))
            return Answer(total, tuple(r.encode() for r in results))

        found = cache.kept((sql, store_key, product_id, whole(params)), ask)
    if found is None:
        return _rows(con, sql, column, store_key, product_id, params)
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
