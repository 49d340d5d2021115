"""The work of a Ray night's tasks, as plain functions that Ray runs remotely. A task holds
nothing between calls, so Ray may run it again after its worker died."""

from __future__ import annotations

import itertools
import resource
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pyarrow as pa  # type: ignore[import-untyped]  # no stubs

from pipeline import db, transform
from pipeline.contract import STORE_KEY, TABLES_BY_NAME
from pipeline.distributed.shards import shard_of
from pipeline.export.records.digests import TableSums, table_sums
from pipeline.ingest import ingest_file, ingest_object
from pipeline.ingest.files import InputFile
from pipeline.ingest.raw import create_raw_table
from pipeline.ingest.remote import RemoteFile
from pipeline.settings import Settings
from pipeline.transform import StepResult
from pipeline.transform.steps import STORE_STEPS, STORE_TABLES

# What a shard hands back as Parquet, table by table: what the warehouse gathers from every
# shard (the stores' raw and staging rows, the marts, the findings), and raw.listings, kept only
# as the shards' Parquet files.
SHARD_TABLES = (
    *(f"raw.{t}" for t in STORE_TABLES),
    *(s.file.table for s in STORE_STEPS),
    "meta.rejects",
    "meta.warnings",
)


def split_by_shard(con: duckdb.DuckDBPyConnection, table: str, shards: int) -> list[pa.Table]:
    """The rows of `table` (a raw stores table) cut into one Arrow table a shard, by the shard
    of their store key as staging writes it (lower-case; `shard_of`). A row without a
    key goes to shard 0, whose checks reject it."""
    found = con.execute(f'SELECT DISTINCT lower("{STORE_KEY.name}") FROM {table}').fetchall()
    keys = [key for (key,) in found if key is not None]
    shard_of_key = pa.table(
        {
            "store_key": pa.array(keys, pa.string()),
            "shard": pa.array([shard_of(key, shards) for key in keys], pa.int32()),
        }
    )
    con.register("shard_of_key", shard_of_key)
    cut: pa.Table = con.sql(
        f"SELECT t.*, coalesce(s.shard, 0) AS _shard FROM {table} AS t "
        f'LEFT JOIN shard_of_key AS s ON s.store_key = lower(t."{STORE_KEY.name}") '
        "ORDER BY _shard"
    ).to_arrow_table()
    con.unregister("shard_of_key")
    counts = cut.group_by("_shard").aggregate([("_shard", "count")]).to_pydict()
    sizes = dict(zip(counts["_shard"], counts["_shard_count"], strict=True))
    bounds = list(itertools.accumulate((sizes.get(i, 0) for i in range(shards)), initial=0))
    rows = cut.drop_columns(["_shard"])
    return [rows.slice(lo, hi - lo) for lo, hi in itertools.pairwise(bounds)]


@dataclass(frozen=True)
class IngestedPart:
    """What a listings file's task read: its rows' sums (`table_sums`), the bytes of the parts
    it handed to the shards (what the engine moves), its worker's peak memory, and the sums of
    each shard's part (`rows_sums`: what tells a night's driver which shards changed)."""

    sums: TableSums
    part_bytes: int
    peak_rss_mb: float
    shard_sums: tuple[TableSums, ...]


def ingest_listings(
    input_dir: Path | None,
    file: InputFile | RemoteFile,
    typed: dict[str, str],
    shards: int,
    max_columns: int,
) -> tuple[IngestedPart, *tuple[pa.Table, ...]]:
    """One listings file as the one-machine ingest loads it, cut into its shards' parts; returns
    what it read, then one part a shard. An input bucket's object is downloaded to this
    machine, read and removed."""
    table = TABLES_BY_NAME["listings"]
    con = db.connect(threads=1)
    try:
        con.execute("CREATE SCHEMA raw")
        create_raw_table(con, table, typed)
        if isinstance(file, RemoteFile):
            ingest_object(con, table, file, typed, max_columns)
        else:
            assert input_dir is not None, "a local file is read under its input directory"
            ingest_file(con, input_dir, table, file, typed, max_columns)
        parts = split_by_shard(con, "raw.listings", shards)
        read = IngestedPart(
            table_sums(con, "raw.listings"),
            sum(p.nbytes for p in parts),
            peak_rss_mb(),
            tuple(rows_sums(con, p) for p in parts),
        )
        return (read, *parts)
    finally:
        con.close()


def rows_sums(con: duckdb.DuckDBPyConnection, rows: pa.Table) -> TableSums:
    """`table_sums` of Arrow rows (a shard's part of a table), read where they are (by a
    cursor of its own: DuckDB refuses a registration beside a result not fetched to its end)."""
    cursor = con.cursor()
    try:
        cursor.register("summed_rows", rows)
        return table_sums(cursor, "summed_rows")
    finally:
        cursor.close()


def peak_rss_mb() -> float:
    """This worker process's peak memory so far (a worker runs task after task)."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def shard_warehouse(
    settings: Settings,
    folder: Path,
    catalog: dict[str, pa.Table],
    stores: dict[str, pa.Table],
    listings: tuple[pa.Table, ...],
) -> tuple[duckdb.DuckDBPyConnection, list[StepResult]]:
    """The shard's DuckDB under `folder`, its rows and the catalog's tables handed over, the
    stores' steps run; with their results."""
    con = db.connect(
        folder / "shard.duckdb",
        memory_limit=settings.build.duckdb_memory_limit,
        threads=settings.build.duckdb_threads,
        temp_directory=folder / "tmp",
    )
    try:
        db.create_schemas(con)
        tables = {**catalog, **stores, "raw.listings": pa.concat_tables(listings)}
        for name, rows in tables.items():
            con.register("handed_over", rows)
            con.execute(f"CREATE TABLE {name} AS SELECT * FROM handed_over")
            con.unregister("handed_over")
        return con, transform.run_steps(con, steps=STORE_STEPS)
    except BaseException:
        con.close()
        raise


def copy_tables(con: duckdb.DuckDBPyConnection, folder: Path) -> None:
    for table in SHARD_TABLES:
        path = db.literal(str(folder / f"{table}.parquet"))
        con.execute(f"COPY {table} TO {path} (FORMAT parquet)")
