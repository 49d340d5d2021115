"""The Ray night's finalize steps (`bucket_night`): the shards checked against what the files'
tasks read, their tables gathered into the warehouse in the order their SQL files give, their
steps' figures added up, and the listings' raw rows kept as the shards' Parquet."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import duckdb

from pipeline import transform
from pipeline.conductor import Conductor
from pipeline.distributed.bucket_shard import ShardSummary
from pipeline.distributed.shards import Shard
from pipeline.distributed.tasks import SHARD_TABLES, IngestedPart
from pipeline.errors import BuildError
from pipeline.export.records.digests import TableSums, add_sums
from pipeline.export.records.report import DistributedFigures
from pipeline.progress import Advance
from pipeline.transform import StepResult
from pipeline.transform.steps import MARKET_STEPS, STORE_STEPS

SHARDS_DIR = "shards"  # in the release: each shard's raw listing rows, as Parquet


def gather_results(ray: Any, pending: list[Any], advance: Advance) -> list[Any]:
    """The shard tasks' results, taken as each finishes (for the progress)."""
    results: list[Any] = []
    while pending:
        done, pending = ray.wait(pending)
        results += ray.get(done)
        advance(len(done))
    return results


def check_shards(results: Sequence[ShardSummary], shards: int, listings: TableSums) -> None:
    """Every shard came once, and together they hold every listing the files' tasks read."""
    came = [r.shard for r in results]
    if came != [Shard(i, shards) for i in range(shards)]:
        raise BuildError(f"shards {', '.join(map(str, came))}: not every shard of {shards} once")
    held = add_sums(r.sums for r in results)
    if held != listings:
        raise BuildError(
            f"the shards hold {held[0]} listings rows, the files' tasks read {listings[0]} "
            "(or other rows): nothing was published"
        )


# Tables whose physical order matters, in the order their SQL file gives them: each shard's rows
# are in that order, their concatenation is not. marts.listing is clustered by store_hash, so
# that a live answer reads only its store's row groups (sql/marts/listing.sql).
CLUSTERED = {s.file.table: f" ORDER BY {s.file.order_by}" for s in STORE_STEPS if s.file.order_by}


def gather_tables(con: duckdb.DuckDBPyConnection, parquet: list[list[Path]]) -> None:
    """The shards' tables (`parquet`: each of SHARD_TABLES' files, shard by shard) into the
    warehouse's (empty, documented) ones; raw.listings stays."""
    for table, paths in zip(SHARD_TABLES, parquet, strict=True):
        if table == "raw.listings":
            continue
        files = [str(p) for p in paths]
        order = CLUSTERED.get(table, "")
        con.execute(
            f"INSERT INTO {table} SELECT * FROM read_parquet($files){order}", {"files": files}
        )


def store_steps(results: Sequence[ShardSummary]) -> list[StepResult]:
    """The stores' steps over every shard: their rows added up, the longest shard's seconds."""
    return [
        StepResult(
            step.name,
            sum(r.steps[i].rows for r in results),
            max(r.steps[i].seconds for r in results),
        )
        for i, step in enumerate(results[0].steps)
    ]


def market_steps(con: duckdb.DuckDBPyConnection) -> list[StepResult]:
    """The marketplace's figures over every store's gathered rows (`MARKET_STEPS`), which the
    pages common to all stores read."""
    return transform.run_steps(con, steps=MARKET_STEPS)


def keep_listings_rows(
    con: duckdb.DuckDBPyConnection, conductor: Conductor, files: list[Path]
) -> None:
    """The listings' raw rows stay as each shard's Parquet (`files`, shard by shard), in the
    release's `shards/<i>/`; the warehouse drops its empty raw.listings."""
    for index, file in enumerate(files):
        target = conductor.release / SHARDS_DIR / str(index)
        target.mkdir(parents=True)
        shutil.move(file, target / "raw.listings.parquet")
    con.execute("DROP TABLE raw.listings")


def cluster_figures(
    shards: int,
    listings_files: int,
    read: Sequence[IngestedPart],
    results: Sequence[ShardSummary],
) -> DistributedFigures:
    return DistributedFigures(
        engine="ray",
        shards=shards,
        listings_files=listings_files,
        shuffle_bytes=sum(r.part_bytes for r in read),
        ingest_peak_rss_mb=max((r.peak_rss_mb for r in read), default=0),
        shard_peak_rss_mb=[r.peak_rss_mb for r in results],
        shard_seconds=[r.seconds for r in results],
    )
