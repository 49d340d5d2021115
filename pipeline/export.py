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
import os
import shutil
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
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
    """Writes files under a release's site directory and remembers their hashes. One thread:
    on this kind of disk, parallel file creation measured slower (docs/benchmarks.md)."""

    root: Path
    previous: Path | None = None  # the published release's site: unchanged files are linked
    previous_files: dict[str, str] = field(default_factory=dict)  # path -> sha256
    files: dict[str, tuple[str, int]] = field(default_factory=dict)  # path -> (sha256, bytes)
    linked: int = 0
    _dirs: set[str] = field(default_factory=set)

    def write(self, path: PurePosixPath | str, body: bytes) -> None:
        name = str(path)  # relative, "/"-separated
        if name in self.files:
            return  # the same page asked for twice (e.g. a page size listed twice): same bytes
        target = f"{self.root}/{name}"
        folder = target.rpartition("/")[0]
        if folder not in self._dirs:
            os.makedirs(folder, exist_ok=True)
            self._dirs.add(folder)
        digest = hashlib.sha256(body).hexdigest()
        self.files[name] = (digest, len(body))
        if self.previous is not None and self.previous_files.get(name) == digest:
            try:  # the same bytes as last night: a hard link, no bytes written
                os.link(f"{self.previous}/{name}", target)
                self.linked += 1
                return
            except OSError:
                pass  # the old file is gone or on another file system: write it
        # "x": never open an existing file, which could be a hard link into a published release.
        with open(target, "xb") as fh:
            fh.write(body)

    def adopt(self, site: Path, name: str, digest: str, size: int) -> None:
        """Take a finished file of another site (a shard's) into this one, without its bytes."""
        target = f"{self.root}/{name}"
        folder = target.rpartition("/")[0]
        if folder not in self._dirs:
            os.makedirs(folder, exist_ok=True)
            self._dirs.add(folder)
        try:
            os.link(f"{site}/{name}", target)
        except OSError:  # another file system
            shutil.copyfile(f"{site}/{name}", target)
        self.files[name] = (digest, size)

    def changes(self) -> dict[str, list[str]]:
        """What a sync to a static host must upload and delete, against the previous release."""
        return {
            "changed": sorted(
                p for p, (h, _) in self.files.items() if self.previous_files.get(p) != h
            ),
            "removed": sorted(set(self.previous_files) - set(self.files)),
        }

    def manifest(self) -> bytes:
        entries = [{"path": p, "sha256": h, "bytes": n} for p, (h, n) in sorted(self.files.items())]
        return orjson.dumps({"files": entries}, option=orjson.OPT_INDENT_2)

    @property
    def total_bytes(self) -> int:
        return sum(n for _, n in self.files.values())


StoreChannel = tuple[str, int]


@dataclass
class Products:
    """One store and channel's products in answer order: their JSON, category and group."""

    json: list[bytes] = field(default_factory=list)
    category: list[int] = field(default_factory=list)
    group: list[int] = field(default_factory=list)


def _store_channel_rows(con: duckdb.DuckDBPyConnection) -> Iterator[tuple[StoreChannel, Products]]:
    """(store_key, channel_id) -> its products in answer order, for the default parameters."""
    bind = api.query_params(InventoryParams(), store_key=None)
    bind.update(channel_id=None, first_position=None, last_position=None)
    reader = con.sql(STORE_INVENTORY.sql, params=bind).to_arrow_reader(BATCH_ROWS)
    key: StoreChannel | None = None
    products = Products()
    for batch in reader:
        cols = batch.to_pydict()
        for store, channel, category, group, text in zip(
            cols["store_key"],
            cols["channel_id"],
            cols["category_id"],
            cols["group_id"],
            cols["product_json"],
            strict=True,
        ):
            if (store, channel) != key:
                if key is not None:
                    yield key, products
                key, products = (store, channel), Products()
            products.json.append(text.encode())
            products.category.append(category)
            products.group.append(group)
    if key is not None:
        yield key, products


def _pages(
    writer: SiteWriter, store_key: str, params: InventoryParams, products: list[bytes], limit: int
) -> int:
    """Every page of one answer. Paths come from `api.page_paths`, one call per answer."""
    offsets = range(0, len(products), limit)
    paths = api.page_paths(store_key, replace(params, limit=limit), offsets)
    total = len(products)
    for offset, path in zip(offsets, paths, strict=True):
        writer.write(path, envelope(total, products[offset : offset + limit]))
    return len(offsets)


def _filtered(channel: int, variant: str, value: int) -> InventoryParams:
    if variant == "categoryId":
        return InventoryParams(channelId=channel, categoryId=value)
    return InventoryParams(channelId=channel, groupId=value)


Shard = tuple[int, int]  # (index, count): this build exports the stores of shard index


def shard_of(store_key: str, count: int) -> int:
    """The shard of a store: stable across runs, machines and Python versions."""
    return zlib.crc32(store_key.encode()) % count


Answer = tuple[InventoryParams, list[bytes]]  # a request's parameters and its products' JSON


def _answers(
    con: duckdb.DuckDBPyConnection,
    settings: ExportSettings,
    shard: Shard | None,
    advance: Callable[[int], None] | None = None,
) -> Iterator[tuple[str, Products, list[Answer]]]:
    """Per store and channel to materialise: the unfiltered answer and its filtered variants."""
    for (store_key, channel), products in _store_channel_rows(con):
        if advance:
            advance(1)
        if settings.channels is not None and channel not in settings.channels:
            continue
        if shard is not None and shard_of(store_key, shard[1]) != shard[0]:
            continue
        answers: list[Answer] = [(InventoryParams(channelId=channel), products.json)]
        for variant in dict.fromkeys(settings.variants):
            values = products.category if variant == "categoryId" else products.group
            by_value: dict[int, list[bytes]] = {}
            for value, text in zip(values, products.json, strict=True):
                by_value.setdefault(value, []).append(text)
            answers += [(_filtered(channel, variant, v), texts) for v, texts in by_value.items()]
        yield store_key, products, answers


def write_inventory_pages(
    con: duckdb.DuckDBPyConnection,
    writer: SiteWriter,
    settings: ExportSettings,
    shard: Shard | None = None,
    advance: Callable[[int], None] | None = None,
) -> dict[str, int]:
    """Every materialised inventory page (of one shard's stores); counts for the report."""
    counts = {"store_channels": 0, "pages": 0, "products": 0}
    for store_key, products, answers in _answers(con, settings, shard, advance):
        counts["store_channels"] += 1
        counts["products"] += len(products.json)
        for limit in dict.fromkeys(settings.limits):
            for params, texts in answers:
                counts["pages"] += _pages(writer, store_key, params, texts, limit)
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


def load_manifest(release: Path | None) -> dict[str, str]:
    """path -> sha256 of a published release, or {} when there is none."""
    if release is None or not (release / "manifest.json").is_file():
        return {}
    entries = orjson.loads((release / "manifest.json").read_bytes())["files"]
    return {e["path"]: e["sha256"] for e in entries}


def write_site(
    con: duckdb.DuckDBPyConnection,
    site_dir: Path,
    settings: ExportSettings,
    previous_release: Path | None = None,
    shard: Shard | None = None,
    advance: Callable[[int], None] | None = None,
) -> tuple[SiteWriter, dict[str, int]]:
    """Write the site; files whose bytes equal the previous release's are hard-linked to it.
    A shard writes its stores' pages; shard 0 also writes the pages common to all stores."""
    previous = load_manifest(previous_release)
    previous_site = previous_release / "site" if previous_release and previous else None
    writer = SiteWriter(site_dir, previous_site, previous)
    counts = write_inventory_pages(con, writer, settings, shard, advance)
    counts["category_pages"] = 0
    if shard is None or shard[0] == 0:
        counts["category_pages"] = write_category_pages(con, writer, settings)
        write_help(writer)
    counts["files"] = len(writer.files)
    counts["files_unchanged"] = writer.linked
    counts["bytes"] = writer.total_bytes
    return writer, counts


def count_store_channels(con: duckdb.DuckDBPyConnection) -> int:
    """Store x channel answers of the default parameters: the unit of the export's progress."""
    sql = (
        "SELECT count(*) FROM (SELECT DISTINCT store_key, channel_id FROM marts.listing "
        "WHERE quantity > 0 AND NOT is_excluded_category)"
    )
    return int(con.execute(sql).fetchall()[0][0])


def count_pages(
    con: duckdb.DuckDBPyConnection, settings: ExportSettings, shard: Shard | None = None
) -> int:
    """How many inventory pages `write_inventory_pages` would write, from the same answers."""
    return sum(
        -(-len(texts) // limit)
        for _, _, answers in _answers(con, settings, shard)
        for limit in dict.fromkeys(settings.limits)
        for _, texts in answers
    )
