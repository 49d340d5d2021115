"""Live answers from the published warehouse: the same SQL and bytes the exporter uses."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import replace
from typing import NoReturn

import duckdb
import pyarrow as pa  # type: ignore[import-untyped]  # no stubs

from pipeline.api.params import DEFAULTS, InventoryParams, bind_params, category_params, used
from pipeline.api.responses import NO_CATEGORIES, NO_PRODUCTS, NO_STORES, ApiError, envelope
from pipeline.db import SqlFile, scalar
from pipeline.serve.cache import Answer, AnswerCache, Rows, whole
from pipeline.transform.steps import (
    CATALOG_CATEGORIES,
    KEPT_PRODUCT_ENTRIES,
    STORE_ENTRIES,
    STORE_INVENTORY,
    STORE_INVENTORY_KEPT,
    STORE_PRODUCT_ENTRIES,
)

# A request's search filters (JSON) where it has none: every GET's.
NO_FILTERS = "[]"
# What a store's search adds to the summary's page (`store_inventory_page`), and what a request
# with no filters runs in its place: the same rows, without the search's macros, which DuckDB
# binds on every request even where they fold to nothing (docs/benchmarks.md).
SEARCH_ONLY = (
    ("name_relevance(search_filters($search_filters), name_key)", "null::integer"),
    ("and search_matches($search_filters, name_key, group_name_key, number_key, rarity_key)", ""),
)
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
    "number_key",
    "rarity_key",
    "product_json",
)


def store_exists(con: duckdb.DuckDBPyConnection, store_key: str) -> bool:
    return bool(scalar(con, "SELECT count(*) FROM marts.store WHERE store_key = ?", [store_key]))


def store_inventory(
    con: duckdb.DuckDBPyConnection,
    store_key: str,
    params: InventoryParams,
    cache: AnswerCache | None = None,
    filters: str = NO_FILTERS,
) -> bytes:
    """The page of GET /v1.39.0/stores/{storeKey}/inventory/products, or ApiError(404): cut
    from the store's products kept for the channel and the listing flags where the cache keeps
    the store, else asked for alone. A store's search gives its body's `filters` (JSON,
    `api.search.SearchBody.filters_json`)."""
    key = store_key.lower()
    kept = None
    if cache is not None and cache.holds_store(key, lambda: store_sizes(con)):
        flags = (params.channelId, params.includeGeneric, params.includeCustom, params.skuLimit)
        kept = cache.kept(
            key,
            (STORE_INVENTORY_KEPT, key, flags),
            lambda: Rows(cache.tables, _products(con, key, params)),
        )
    if cache is None or kept is None:
        sql = summary_sql(STORE_INVENTORY, filters)
        total, results = _rows(con, sql, "product_json", key, None, params, filters)
    else:
        sql = summary_sql(STORE_INVENTORY_KEPT, filters)
        total, results = _cut(
            cache, kept, sql, "kept_products", "product_json", None, params, filters
        )
    if not results:
        raise_not_found(con, key)
    return envelope(total, results)


def summary_sql(file: SqlFile, filters: str = NO_FILTERS) -> str:
    """The summary's SQL for a request with a search's `filters`: with none (every GET), its
    text without the search's filter and rank (`SEARCH_ONLY`)."""
    return file.sql if filters != NO_FILTERS else _without_search(file.sql)


@functools.cache
def _without_search(sql: str) -> str:
    for text, instead in SEARCH_ONLY:
        if text not in sql:  # the page part changed: this must follow it
            raise ValueError(f"the summary's SQL has no {text!r} (pipeline.serve.live)")
        sql = sql.replace(text, instead)
    return sql


def _products(con: duckdb.DuckDBPyConnection, store_key: str, params: InventoryParams) -> pa.Table:
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
    sql = summary_sql(STORE_INVENTORY)
    bind = used(sql, bind_params(every, [store_key]))
    bind.update(first_position=None, last_position=None)
    return con.sql(sql, params=bind).select(*KEPT_COLUMNS).to_arrow_table()


def _entries(con: duckdb.DuckDBPyConnection, store_key: str, params: InventoryParams) -> pa.Table:
    """The store's matching entries of every product for the request's channel and listing
    flags (`store_entries`)."""
    sql = STORE_ENTRIES.sql
    return con.sql(sql, params=used(sql, bind_params(params, [store_key]))).to_arrow_table()


def _cut(
    cache: AnswerCache,
    kept: Rows,
    sql: str,
    placeholder: str,
    column: str,
    product_id: int | None,
    params: InventoryParams,
    filters: str = NO_FILTERS,
) -> tuple[int, list[str]]:
    """The page a query cuts from kept rows: the query with the rows' table named in place of
    `placeholder`, on this thread's cursor of the cache's own database. Its bind parameters are
    read from the query before the name is written in (`used` keeps one entry a query, not
    one a kept table)."""
    bind = used(sql, {**bind_params(params, None, product_id), "search_filters": filters})
    named = sql.replace(placeholder, kept.table)
    return _read(cache.tables.cursor().execute(named, bind), column)


def answered(
    con: duckdb.DuckDBPyConnection,
    file: SqlFile,
    column: str,
    store_key: str,
    product_id: int | None,
    params: InventoryParams,
    cache: AnswerCache | None,
) -> tuple[int, Sequence[str | bytes]]:
    """(total_items, the page's result objects) of a store operation's SQL for a request.
    With a cache that keeps the store: for a product's operation, cut from the store's kept
    entries (asked once for the channel and the listing flags); for another, a slice of the
    combination's whole answer (asked once). Else the page alone."""
    if cache is None or not cache.holds_store(store_key, lambda: store_sizes(con)):
        return _rows(con, file.sql, column, store_key, product_id, params)
    if file.includes(STORE_PRODUCT_ENTRIES):
        flags = (
            params.channelId,
            params.includeGeneric,
            params.includeCustom,
            params.includeExcludedCategories,
        )
        entries = cache.kept(
            store_key,
            (STORE_ENTRIES, store_key, flags),
            lambda: Rows(cache.tables, _entries(con, store_key, params)),
        )
        if entries is not None:
            sql = file.sql_instead(STORE_PRODUCT_ENTRIES, KEPT_PRODUCT_ENTRIES)
            return _cut(cache, entries, sql, "kept_entries", column, product_id, params)

    def ask() -> Answer:
        total, results = _rows(con, file.sql, column, store_key, product_id, whole(params))
        return Answer(total, tuple(r.encode() for r in results))

    found = cache.kept(store_key, (file, store_key, product_id, whole(params)), ask)
    if found is None:
        return _rows(con, file.sql, column, store_key, product_id, params)
    return found.total, found.page(params)


def _rows(
    con: duckdb.DuckDBPyConnection,
    sql: str,
    column: str,
    store_key: str,
    product_id: int | None,
    params: InventoryParams,
    filters: str = NO_FILTERS,
) -> tuple[int, list[str]]:
    bind = used(sql, {**bind_params(params, [store_key], product_id), "search_filters": filters})
    return _read(con.execute(sql, bind), column)


def _read(result: duckdb.DuckDBPyConnection, column: str) -> tuple[int, list[str]]:
    """(total_items, the `column` of every row) of an operation's result."""
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
