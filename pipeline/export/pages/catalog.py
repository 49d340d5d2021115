"""The catalog's pages, of no store: the category listing in its default order, and the default
pages of the catalog and price operations that `export.catalog_operations` materialises (a
category's groups, conditions, languages and printings, the conditions, each group's prices),
each from its operation's SQL file, as the live answers are."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from itertools import groupby
from pathlib import PurePosixPath
from typing import NamedTuple

import duckdb

from pipeline.api import urls
from pipeline.api.catalog import CATALOG_OPERATIONS, CatalogOperation, page_path
from pipeline.api.params import DEFAULTS, InventoryParams, bind_params, category_params, used
from pipeline.api.responses import envelope, results_envelope
from pipeline.export.writer import SiteWriter
from pipeline.settings import ExportSettings
from pipeline.transform.steps import CATALOG_CATEGORIES, CATALOG_SQL


class Row(NamedTuple):
    """A row of a catalog operation's SQL file."""

    path_id: int | None  # the page's path id (the exporter reads every one at once)
    position: int | None  # the row's place in the answer (of a list of ids: within its id)
    total_items: int | None
    item_id: int | None
    result_json: str | None  # None: an id found with no result (a product with no SKUs)


def rows(
    con: duckdb.DuckDBPyConnection,
    op: CatalogOperation,
    ids: list[int],
    params: InventoryParams,
    *,
    whole: bool = False,
) -> list[Row]:
    """The operation's rows for a request; with `whole`, every row of a paged operation, and
    of every path id when `ids` is empty (the exporter's)."""
    sql = CATALOG_SQL[op].sql
    values = {**bind_params(params, None), "item_id": ids[0] if ids else None, "ids": ids}
    if whole:
        values.update(first_position=None, last_position=None)
    return [Row(*r) for r in con.execute(sql, used(sql, values)).fetchall()]


def write_category_pages(
    con: duckdb.DuckDBPyConnection, writer: SiteWriter, settings: ExportSettings
) -> int:
    """The category listing's pages in its default order (the live answers' SQL, uncut)."""
    bind = {**category_params(DEFAULTS), "first_position": None, "last_position": None}
    results = [r[3].encode() for r in con.execute(CATALOG_CATEGORIES.sql, bind).fetchall()]
    return _paged(writer, settings, results, urls.categories_page_path)


def write_catalog_pages(
    con: duckdb.DuckDBPyConnection, writer: SiteWriter, settings: ExportSettings
) -> int:
    """The default pages of the materialised catalog and price operations: one query an
    operation, for every path id at once."""
    pages = 0
    for op in CATALOG_OPERATIONS:
        if op.operation_id not in settings.catalog_operations:
            continue
        for path_id, found in groupby(rows(con, op, [], DEFAULTS, whole=True), lambda r: r.path_id):
            results = [r.result_json.encode() for r in found if r.result_json is not None]
            if op.form == "page":
                pages += _paged(writer, settings, results, partial(page_path, op, path_id))
            elif results:
                writer.write(str(page_path(op, path_id, DEFAULTS)), results_envelope(results))
                pages += 1
    return pages


def _paged(
    writer: SiteWriter,
    settings: ExportSettings,
    results: list[bytes],
    path: Callable[[InventoryParams], PurePosixPath],
) -> int:
    """Every page of a whole answer, of each page size of `category_limits`."""
    pages = 0
    for limit in dict.fromkeys(settings.category_limits):
        for offset in range(0, len(results), limit):
            params = InventoryParams(offset=offset, limit=limit)
            writer.write(
                str(path(params)), envelope(len(results), results[offset : offset + limit])
            )
            pages += 1
    return pages
