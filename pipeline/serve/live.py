"""Live answers from the published warehouse: the same SQL and bytes the exporter uses."""

from __future__ import annotations

from typing import NoReturn

import duckdb

from pipeline.api.params import InventoryParams, bind_params, category_params, used
from pipeline.api.responses import NO_CATEGORIES, NO_PRODUCTS, NO_STORES, ApiError, envelope
from pipeline.db import scalar
from pipeline.transform.steps import CATALOG_CATEGORIES, STORE_INVENTORY


def store_exists(con: duckdb.DuckDBPyConnection, store_key: str) -> bool:
    return bool(scalar(con, "SELECT count(*) FROM marts.store WHERE store_key = ?", [store_key]))


def store_inventory(
    con: duckdb.DuckDBPyConnection, store_key: str, params: InventoryParams
) -> bytes:
    """The page of GET /v1.39.0/stores/{storeKey}/inventory/products, or ApiError(404)."""
    key = store_key.lower()
    sql = STORE_INVENTORY.sql
    result = con.execute(sql, used(sql, bind_params(params, [key])))
    names = [d[0] for d in result.description]
    total, product = names.index("total_items"), names.index("product_json")
    rows = result.fetchall()
    if not rows:
        raise_not_found(con, key)
    return envelope(rows[0][total], (r[product] for r in rows))


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
