"""Two nights' inputs for the Ray tests, and their one-machine builds: a generated input
("same"), and a copy of it where some stores changed a price ("changed"); and the check that a
Ray night's output is the one-machine build's (`assert_same_build`)."""

from __future__ import annotations

import shutil
from collections.abc import Set
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pytest

from pipeline.build import build
from pipeline.distributed.finalize import SHARDS_DIR
from pipeline.export.records.nights import PARTITION, SUFFIX
from pipeline.paths import MANIFEST, NIGHTS, WAREHOUSE
from pipeline.settings import load_settings
from pipeline.tools.generate import generate
from pipeline.transform.steps import NIGHT_TABLES

Nights = dict[str, tuple[Path, Path]]  # "same"/"changed" -> (input, its one-machine output)


def two_nights(
    tmp_path_factory: pytest.TempPathFactory,
    name: str,
    stores: int,
    listings: int,
    changed_stores: Set[str],
    export: dict[str, Any] | None = None,
) -> Nights:
    """A generated input of `stores` and `listings`, and a copy in which every listing of
    `changed_stores` costs a unit more (its file's columns of the same types); each built on
    one machine (with the `export` settings, if given)."""
    same = tmp_path_factory.mktemp(f"{name}-same")
    generate(same, stores=stores, listings=listings, seed=7)
    changed = tmp_path_factory.mktemp(f"{name}-changed")
    shutil.copytree(same, changed, dirs_exist_ok=True)
    listings_file = changed / "stores" / "listings" / "part-000.parquet"
    rows = pl.read_parquet(listings_file)
    assert rows.filter(pl.col("storeKey").is_in(changed_stores)).height > 0
    rows = rows.with_columns(  # in the column's own type, as the next night's export has it
        price=pl.when(pl.col("storeKey").is_in(changed_stores))
        .then(pl.col("price") + pl.lit(1, pl.Decimal(12, 2)))
        .otherwise(pl.col("price"))
        .cast(rows.schema["price"])
    )
    rows.write_parquet(listings_file)
    built = {}
    for night, inputs in (("same", same), ("changed", changed)):
        one_machine = tmp_path_factory.mktemp(f"{name}-one-{night}")
        build(load_settings(None, input=inputs, output=one_machine, export=export or {}))
        built[night] = (inputs, one_machine)
    return built


def assert_same_build(one_machine: Path, distributed: Path) -> None:
    """The same manifest, byte for byte; the same rows in every table of the warehouse, the
    listings' raw rows being the shards' Parquet files (the release's `shards/<i>/`); the same
    market history (history.* and its files), one night in each."""
    one = one_machine
    assert (distributed / MANIFEST).read_bytes() == (one_machine / MANIFEST).read_bytes()
    con = duckdb.connect()
    con.execute(f"ATTACH '{one_machine / WAREHOUSE}' AS one (READ_ONLY)")
    con.execute(f"ATTACH '{distributed / WAREHOUSE}' AS other (READ_ONLY)")
    tables = _tables(con, "one")
    assert sorted([*_tables(con, "other"), "raw.listings"]) == tables
    for table in tables:
        other = f"other.{table}"
        if table == "raw.listings":
            shards = distributed.resolve() / "current" / SHARDS_DIR
            other = f"read_parquet('{shards}/*/raw.listings.parquet')"
        assert _differences(con, f"one.{table}", other) == 0, table
    assert _comments(con, "other") == _comments(con, "one")  # every table's, as documented
    # The same market history: each night's rows but its build and start, one night each.
    for table in NIGHT_TABLES:
        night = f"{PARTITION}*/{table.name}{SUFFIX}"
        files = [sorted((output / NIGHTS).glob(night)) for output in (one, distributed)]
        assert [len(f) for f in files] == [1, 1], files
        rows = [
            f"(SELECT * EXCLUDE (build_id, built_at) FROM {db}.history.{table.name})"
            for db in ("one", "other")
        ]
        assert _differences(con, *rows) == 0, table.name
        history = "(SELECT * EXCLUDE (build_id, built_at) FROM read_parquet('{}'))"
        assert _differences(con, *(history.format(f[0]) for f in files)) == 0, table.name
    con.close()


def _tables(con: duckdb.DuckDBPyConnection, database: str) -> list[str]:
    rows = con.execute(
        "SELECT schema_name || '.' || table_name FROM duckdb_tables() "
        "WHERE database_name = ? ORDER BY 1",
        [database],
    ).fetchall()
    return [name for (name,) in rows if name != "meta.build_run"]  # one row a build


def _comments(con: duckdb.DuckDBPyConnection, database: str) -> list[tuple[str, ...]]:
    """The comments of every table and column of `database` (but raw.listings', which a Ray
    night keeps in its shards' files)."""
    rows = con.execute(
        "SELECT schema_name, table_name, '', comment FROM duckdb_tables() WHERE database_name = ? "
        "UNION ALL SELECT schema_name, table_name, column_name, comment FROM duckdb_columns() "
        "WHERE database_name = ? ORDER BY ALL",
        [database, database],
    ).fetchall()
    return [r for r in rows if r[:2] != ("raw", "listings")]


def _differences(con: duckdb.DuckDBPyConnection, one: str, other: str) -> int:
    return int(
        con.execute(
            f"SELECT (SELECT count(*) FROM (FROM {one} EXCEPT ALL FROM {other})) "
            f"+ (SELECT count(*) FROM (FROM {other} EXCEPT ALL FROM {one}))"
        ).fetchone()[0]  # type: ignore[index]
    )
