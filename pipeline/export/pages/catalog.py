"""The catalog's category listing (`/catalog/categories`), a page of no store: its pages in the
default order, of each page size."""

from __future__ import annotations

import duckdb

from pipeline.api import urls
from pipeline.api.params import DEFAULTS, InventoryParams, category_params
from pipeline.api.responses import envelope
from pipeline.export.writer import SiteWriter
from pipeline.settings import ExportSettings
from pipeline.transform.steps import CATALOG_CATEGORIES


def write_category_pages(
    con: duckdb.DuckDBPyConnection, writer: SiteWriter, settings: ExportSettings
) -> int:
    """The category listing's pages in its default order (the live answers' SQL, uncut)."""
    bind = {**category_params(DEFAULTS), "first_position": None, "last_position": None}
    rows = [r[3].encode() for r in con.execute(CATALOG_CATEGORIES.sql, bind).fetchall()]
    pages = 0
    for limit in dict.fromkeys(settings.category_limits):
        for offset in range(0, len(rows), limit):
            writer.write(
                str(urls.categories_page_path(InventoryParams(offset=offset, limit=limit))),
                envelope(len(rows), rows[offset : offset + limit]),
            )
            pages += 1
    return pages
