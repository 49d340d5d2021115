"""What a store's pages and a build's release depend on, as digests: equal digests, equal
outputs. A *digest* is the SHA-256 of what an output depends on; a file's content hash is its
*sha256*; a store's *inputs* are what DuckDB sums up of its listings."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import duckdb
import polars as pl

from pipeline.contract import TABLES
from pipeline.paths import STORES
from pipeline.settings import ExportSettings

_PACKAGE = Path(__file__).resolve().parents[2]


@cache
def code_digest() -> bytes:
    """The pipeline's code and SQL: a change may rename or reshape pages."""
    digest = hashlib.sha256()
    files = [*_PACKAGE.rglob("*.py"), *(_PACKAGE.parent / "sql").rglob("*.sql")]
    for file in sorted(files):
        name = file.relative_to(_PACKAGE.parent).as_posix()
        digest.update(name.encode() + b"\0" + file.read_bytes() + b"\0")
    return digest.digest()


def store_inputs(con: duckdb.DuckDBPyConnection, stores: list[str]) -> dict[str, bytes]:
    """Each store's inputs, summed up without answering: its listing rows joined with what its
    pages read, hashed whole, folded by xor and by sum, with the row count."""
    rows = con.execute(
        """
        SELECT store_key, count(*), bit_xor(h), sum(h::HUGEINT)
        FROM (
            SELECT
                listing.store_key,
                hash(
                    listing, product, sku, grp.name, grp.abbreviation, grp.is_supplemental,
                    grp.published_on, grp.modified_on, grp.category_id
                ) AS h
            FROM marts.listing AS listing
            JOIN export.product AS product USING (product_id)
            JOIN export.sku AS sku USING (sku_id)
            JOIN staging.groups AS grp ON grp.group_id = listing.group_id
            WHERE list_contains($stores, listing.store_key))
        GROUP BY store_key
        """,
        {"stores": stores},
    ).fetchall()
    return {key: f"{n}:{xor}:{total}".encode() for key, n, xor, total in rows}


def store_digest(settings: ExportSettings, inputs: bytes) -> bytes:
    """What a store's pages depend on: its inputs (`store_inputs`), the export settings and the
    code. Equal digests give equal pages."""
    return hashlib.sha256(code_digest() + settings.pages_json() + b"\0" + inputs).digest()


TableSums = tuple[int, int, int]  # rows, xor and sum of their hashes: see `table_sums`


def table_sums(con: duckdb.DuckDBPyConnection, table: str) -> TableSums:
    """A table's rows summed up as `store_inputs` sums a store's: count, xor and sum of each
    whole row's hash. Sums of parts add up (`add_sums`) to the sums of the whole."""
    n, xor, total = con.execute(
        f"SELECT count(*), coalesce(bit_xor(hash(t)), 0), coalesce(sum(hash(t)::HUGEINT), 0) "
        f"FROM {table} AS t"
    ).fetchone() or (0, 0, 0)
    return int(n), int(xor), int(total)


def add_sums(parts: Iterable[TableSums]) -> TableSums:
    n, xor, total = 0, 0, 0
    for part_n, part_xor, part_total in parts:
        n, xor, total = n + part_n, xor ^ part_xor, total + part_total
    return n, xor, total


def inputs_digest(sums: Mapping[str, TableSums], settings: ExportSettings) -> str:
    """What a build's pages depend on besides the code: every row as ingested (`raw.*`, with
    its file and row number: what was read, not the files as they are by the end), summed up
    per table (`table_sums`), and the export settings (hex)."""
    digest = hashlib.sha256(settings.pages_json())
    for table in TABLES:
        n, xor, total = sums.get(table.name, (0, 0, 0))
        digest.update(f"{table.name}:{n}:{xor}:{total}\n".encode())
    return digest.hexdigest()


@dataclass(frozen=True)
class StoreRecord:
    """A store's digest and what its pages hold, kept in the release for the next build."""

    digest: bytes
    channels: int
    products: int
    pages: int


_STORES_SCHEMA = {
    "store_key": pl.String,
    "digest": pl.Binary,
    "channels": pl.Int64,
    "products": pl.Int64,
    "pages": pl.Int64,
}


def write_store_records(release: Path, stores: dict[str, StoreRecord]) -> None:
    rows = [(key, r.digest, r.channels, r.products, r.pages) for key, r in sorted(stores.items())]
    pl.DataFrame(rows, schema=_STORES_SCHEMA, orient="row").write_parquet(release / STORES)


def load_store_records(release: Path | None) -> dict[str, StoreRecord]:
    """store key -> record in a published release (none without one)."""
    if release is None:
        return {}
    frame = pl.read_parquet(release / STORES)
    if frame.schema != pl.Schema(_STORES_SCHEMA):
        raise ValueError(f"columns {frame.columns}, not {list(_STORES_SCHEMA)}")
    return {key: StoreRecord(*rest) for key, *rest in frame.iter_rows()}
