"""Export stage: the warehouse -> the static site of one release, and its manifest.

The store inventory SQL runs once, for every store and channel with the default parameters; its
rows arrive ordered by store, channel and position and are streamed in record batches, one
(store, channel) at a time. Each product's JSON is built once (in SQL) and shared by the
unfiltered pages and the categoryId / groupId pages, which keep the products of one category or
group in the same order: filtering by category or group removes whole products and changes no
other product's entry.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from itertools import groupby
from pathlib import Path, PurePosixPath

import duckdb
import orjson

from pipeline import api
from pipeline.api import InventoryParams, envelope
from pipeline.models import help_page, openapi_document
from pipeline.settings import ExportSettings
from pipeline.steps import STORE_INVENTORY

BATCH_ROWS = 50_000


@dataclass
class SiteWriter:
    """Writes files under a release's site directory and remembers their hashes."""

    root: Path
    files: dict[str, tuple[str, int]] = field(default_factory=dict)  # path -> (sha256, bytes)

    def write(self, path: PurePosixPath, body: bytes) -> None:
        target = self.root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(body)
        self.files[path.as_posix()] = (hashlib.sha256(body).hexdigest(), len(body))

    def manifest(self) -> bytes:
        entries = [{"path": p, "sha256": h, "bytes": n} for p, (h, n) in sorted(self.files.items())]
        return orjson.dumps({"files": entries}, option=orjson.OPT_INDENT_2)

    @property
    def total_bytes(self) -> int:
        return sum(n for _, n in self.files.values())


@dataclass(frozen=True)
class ProductRow:
    category_id: int
    group_id: int
    json: bytes


def _store_channel_rows(
    con: duckdb.DuckDBPyConnection,
) -> Iterator[tuple[tuple[str, int], list[ProductRow]]]:
    """(store_key, channel_id) -> its products in answer order, for the default parameters."""
    bind = api.query_params(InventoryParams(), store_key=None)
    bind.update(channel_id=None, first_position=None, last_position=None)
    reader = con.sql(STORE_INVENTORY.sql, params=bind).to_arrow_reader(BATCH_ROWS)

    def rows() -> Iterator[tuple[tuple[str, int], ProductRow]]:
        for batch in reader:
            cols = batch.to_pydict()
            for key, channel, category, group, text in zip(
                cols["store_key"],
                cols["channel_id"],
                cols["category_id"],
                cols["group_id"],
                cols["product_json"],
                strict=True,
            ):
                yield (key, channel), ProductRow(category, group, text.encode())

    for key, items in groupby(rows(), key=lambda item: item[0]):
        yield key, [row for _, row in items]


def _pages(
    writer: SiteWriter, store_key: str, params: InventoryParams, products: list[bytes], limit: int
) -> int:
    for offset in range(0, len(products), limit):
        writer.write(
            api.inventory_page_path(store_key, replace(params, offset=offset, limit=limit)),
            envelope(len(products), products[offset : offset + limit]),
        )
    return -(-len(products) // limit)


def write_inventory_pages(
    con: duckdb.DuckDBPyConnection, writer: SiteWriter, settings: ExportSettings
) -> dict[str, int]:
    """Every materialised inventory page; returns counts for the build report."""
    counts = {"store_channels": 0, "pages": 0, "products": 0}
    for (store_key, channel), rows in _store_channel_rows(con):
        counts["store_channels"] += 1
        counts["products"] += len(rows)
        base = InventoryParams(channelId=channel)
        for limit in settings.limits:
            counts["pages"] += _pages(writer, store_key, base, [r.json for r in rows], limit)
            for variant in settings.variants:
                by_value: dict[int, list[bytes]] = {}
                for row in rows:
                    value = row.category_id if variant == "categoryId" else row.group_id
                    by_value.setdefault(value, []).append(row.json)
                for value, products in by_value.items():
                    params = InventoryParams(channelId=channel, **{variant: value})  # type: ignore[arg-type]
                    counts["pages"] += _pages(writer, store_key, params, products, limit)
    return counts


def write_category_pages(
    con: duckdb.DuckDBPyConnection, writer: SiteWriter, settings: ExportSettings
) -> int:
    rows = [
        r[0].encode()
        for r in con.execute(
            "SELECT category_json FROM export.category ORDER BY category_id"
        ).fetchall()
    ]
    pages = 0
    for limit in settings.category_limits:
        for offset in range(0, len(rows), limit):
            writer.write(
                api.categories_page_path(offset, limit),
                envelope(len(rows), rows[offset : offset + limit]),
            )
            pages += 1
    return pages


def write_help(writer: SiteWriter) -> None:
    writer.write(PurePosixPath(api.VERSION, "help", "index.html"), help_page().encode())
    writer.write(
        PurePosixPath(api.VERSION, "help", "openapi.json"),
        orjson.dumps(openapi_document(), option=orjson.OPT_INDENT_2),
    )


def write_site(
    con: duckdb.DuckDBPyConnection, site_dir: Path, settings: ExportSettings
) -> tuple[SiteWriter, dict[str, int]]:
    writer = SiteWriter(site_dir)
    counts = write_inventory_pages(con, writer, settings)
    counts["category_pages"] = write_category_pages(con, writer, settings)
    write_help(writer)
    counts["files"] = len(writer.files)
    counts["bytes"] = writer.total_bytes
    return writer, counts
