"""The inventory pages of the stores: answered in batches of about `batch_listings` listings
by the store inventory SQL, paged in polars (`inventory_pages`), written by the site writer."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import duckdb
import polars as pl

from pipeline.api import urls
from pipeline.api.params import InventoryParams, bind_params, used
from pipeline.api.responses import envelope_expr
from pipeline.export.pages.store_lists import list_pages
from pipeline.export.records.digests import StoreRecord, store_digest, store_inputs
from pipeline.export.writer import SiteWriter
from pipeline.progress import Advance
from pipeline.settings import ExportSettings, Settings
from pipeline.transform.steps import STORE_INVENTORY

CHUNK_ROWS = 50_000  # answer rows (store x channel x product) made into pages at a time


def store_batches(con: duckdb.DuckDBPyConnection, batch_listings: int) -> list[list[str]]:
    """The stores to export, in key order, cut into batches of about
    `batch_listings` listings: what one run of the inventory query holds in memory."""
    rows = con.execute(
        "SELECT store_key, listing_count FROM marts.store WHERE listing_count > 0 "
        "ORDER BY store_key"
    ).fetchall()
    batches: list[list[str]] = []
    size = batch_listings
    for key, listings in rows:
        if size + listings > batch_listings:
            batches.append([])
            size = 0
        batches[-1].append(key)
        size += listings
    return batches


def _answer_chunks(
    con: duckdb.DuckDBPyConnection, stores: list[str], channels: list[int] | None
) -> Iterator[pl.DataFrame]:
    """The default request of every channel of these stores, answered in one run of the store
    inventory SQL, ordered by store, channel and position, in slices of whole stores of about
    `CHUNK_ROWS` rows."""
    bind = used(STORE_INVENTORY.sql, bind_params(InventoryParams(), None))
    bind.update(store_keys=stores, channel_id=None, first_position=None, last_position=None)
    # No ORDER BY here: SELECT and WHERE keep the inventory SQL's order (DuckDB's documented
    # order preservation), and a query that reads no position runs no window.
    answers: pl.DataFrame = con.sql(
        f"""
        SELECT store_key, channel_id, category_id, group_id, product_json
        FROM ({STORE_INVENTORY.sql}
        )
        WHERE $channels IS NULL OR list_contains($channels, channel_id)
        """,
        params={**bind, "channels": channels},
    ).pl()
    sizes = answers.group_by("store_key", maintain_order=True).len()["len"].to_list()
    start = end = 0
    for size in sizes:
        end += size
        if end - start >= CHUNK_ROWS:
            yield answers.slice(start, end - start)
            start = end
    if end > start:
        yield answers.slice(start, end - start)


def inventory_pages(answers: pl.DataFrame, settings: ExportSettings) -> pl.DataFrame:
    """Every materialised page of these answers (ordered by store, channel and position):
    columns store_key, name (the file name) and body. The unfiltered answer is cut into pages
    of each limit; so is each categoryId / groupId variant: the products of one category or
    group, in the same order (a filter removes whole products and changes no other entry)."""
    channels = answers["channel_id"].unique().to_list()
    channel = pl.col("channel_id")
    keys = ["store_key", "channel_id", "value"]
    parts = []
    for variant in [None, *dict.fromkeys(settings.variants)]:
        if variant is None:
            value: pl.Expr = pl.lit(None, pl.Int64)
            queries = {
                c: urls.canonical_query(InventoryParams(channelId=c), paging=False)
                for c in channels
            }
            query = channel.replace_strict(queries, return_dtype=pl.String)
        else:
            value = pl.col("category_id" if variant == "categoryId" else "group_id").cast(pl.Int64)
            before, after = zip(*(urls.filtered_query(c, variant) for c in channels), strict=True)
            query = pl.concat_str(
                channel.replace_strict(channels, before, return_dtype=pl.String),
                pl.col("value").cast(pl.String),
                channel.replace_strict(channels, after, return_dtype=pl.String),
            )
        keyed = answers.select("store_key", "channel_id", value.alias("value"), "product_json")
        keyed = keyed.with_columns(
            index=pl.int_range(pl.len()).over(keys), total=pl.len().over(keys)
        )
        for limit in dict.fromkeys(settings.limits):
            pages = keyed.group_by(
                *keys, (pl.col("index") // limit).alias("page"), maintain_order=True
            ).agg(pl.col("product_json").str.join(","), pl.col("total").first())
            body = envelope_expr(pl.col("total"), pl.col("product_json"))
            parts.append(
                pages.select(
                    "store_key",
                    urls.page_names(query, pl.col("page"), limit).alias("name"),
                    body.cast(pl.Binary).alias("body"),
                )
            )
    return pl.concat(parts)


def write_inventory_pages(
    con: duckdb.DuckDBPyConnection,
    writer: SiteWriter,
    settings: Settings,
    *,
    previous_stores: dict[str, StoreRecord],
    advance: Advance | None = None,
) -> tuple[dict[str, int], dict[str, StoreRecord]]:
    """Every materialised inventory page of the stores the warehouse holds; counts for the
    report and a record of each store. A store whose digest equals the previous release's is
    carried over: its files are linked and it is never even answered."""
    unchanged = 0
    records: dict[str, StoreRecord] = {}
    export = settings.export
    batches = store_batches(con, settings.export.batch_listings)
    # Every store's inputs in one pass over the listings: a pass a batch would scan the SKUs and
    # products again each time.
    inputs = store_inputs(con, [key for stores in batches for key in stores])
    digests = {key: store_digest(export, i) for key, i in inputs.items()}
    for stores in batches:
        rebuild = []
        for key in stores:
            if (digest := digests.get(key)) is None:  # no listing the inventory SQL reads
                continue
            known = previous_stores.get(key)
            if known is None or known.digest != digest or not writer.can_carry(key):
                rebuild.append(key)
                continue
            writer.carry(key)
            records[key] = known
            unchanged += 1
            if advance:
                advance(known.channels)
        if not rebuild:
            continue
        for answers in _answer_chunks(con, rebuild, export.channels):
            for key, record in _write_chunk(con, writer, export, answers, digests).items():
                records[key] = record
                if advance:
                    advance(record.channels)
    return record_counts(records.values(), unchanged), records


def record_counts(records: Iterable[StoreRecord], unchanged: int) -> dict[str, int]:
    """The report's counts of stores' pages, from their records; `unchanged` of them carried."""
    counts = {"store_channels": 0, "pages": 0, "products": 0, "stores_unchanged": unchanged}
    for record in records:
        counts["store_channels"] += record.channels
        counts["products"] += record.products
        counts["pages"] += record.pages
    return counts


def _write_chunk(
    con: duckdb.DuckDBPyConnection,
    writer: SiteWriter,
    settings: ExportSettings,
    answers: pl.DataFrame,
    digests: dict[str, bytes],
) -> dict[str, StoreRecord]:
    """Write the pages of a chunk of answers, and the stores' categories and groups pages
    (`store_lists`), each store into a folder of its own; returns a record of each store."""
    pages = _all_pages(con, answers, settings)
    stores = answers.group_by("store_key", maintain_order=True).agg(
        channels=pl.col("channel_id").n_unique(), products=pl.len()
    )
    written = dict(pages.group_by("store_key").len().iter_rows())
    dirs, records = {}, {}
    for key, channels, products in stores.iter_rows():
        dirs[key] = writer.open_store(key, f"{key}-{digests[key].hex()[:16]}")
        records[key] = StoreRecord(digests[key], channels, products, written[key])
    name = pl.lit("/") + pl.col("name")
    store = pl.col("store_key")  # lower-case in the warehouse, as in `inventory_page_path`
    writer.write_pages(
        pages.select(
            path=pl.lit(f"{urls.STORES_DIR}/") + store + name,
            body="body",
            target=store.replace_strict(dirs, return_dtype=pl.String) + name,
        )
    )
    return records


def _all_pages(
    con: duckdb.DuckDBPyConnection, answers: pl.DataFrame, settings: ExportSettings
) -> pl.DataFrame:
    """The inventory pages of these answers and their stores' lists: store_key, name (the path
    under the store's folder), body."""
    products = inventory_pages(answers, settings)
    products = products.with_columns(name=pl.lit(f"{urls.PRODUCTS_DIR}/") + pl.col("name"))
    stores = answers["store_key"].unique(maintain_order=True).to_list()
    channels = answers["channel_id"].unique().to_list()
    return pl.concat([products, list_pages(con, stores, channels, settings)])


def count_store_channels(con: duckdb.DuckDBPyConnection) -> int:
    """Store x channel answers of the default parameters: the unit of the export's progress."""
    rows = con.execute(
        "SELECT store_key, count(DISTINCT channel_id) FROM marts.listing "
        "WHERE quantity > 0 AND NOT is_excluded_category GROUP BY store_key"
    ).fetchall()
    return sum(n for _, n in rows)


def count_pages(con: duckdb.DuckDBPyConnection, settings: Settings) -> int:
    """How many inventory pages `write_inventory_pages` would write, from the same answers."""
    pages = 0
    for stores in store_batches(con, settings.export.batch_listings):
        for answers in _answer_chunks(con, stores, settings.export.channels):
            pages += _all_pages(con, answers, settings.export).height
    return pages
