"""A shard's task in a Ray night. It builds its stores in a scratch folder of its own, uploads
their new versions and its parts itself, and hands back a summary (docs/cluster.md, "How a
night runs")."""

from __future__ import annotations

import fcntl
import os
import secrets
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import pyarrow as pa  # type: ignore[import-untyped]  # no stubs

from pipeline import export
from pipeline.distributed.parts import BucketShard, ShardDoc, publish_shard
from pipeline.distributed.shards import Shard
from pipeline.distributed.tasks import SHARD_TABLES, copy_tables, peak_rss_mb, shard_warehouse
from pipeline.export.records.digests import StoreRecord, TableSums, table_sums
from pipeline.paths import MANIFEST_PARQUET, SITE, STORES
from pipeline.settings import Settings
from pipeline.transform import StepResult


@dataclass(frozen=True)
class ShardSummary:
    """What a shard of a night straight to a bucket hands back: no row of its pages or
    tables, only its figures and where its parts are (`parts.publish_shard`)."""

    shard: Shard
    parts: str  # the prefix of its attempt's parts in the bucket
    counts: dict[str, int]
    steps: list[StepResult]
    sums: TableSums
    seconds: float
    peak_rss_mb: float
    stores_new: int
    puts: int
    uploaded_bytes: int
    reused: bool = False  # no task ran: the parts of the release the night started from


TABLE_PARTS = tuple(f"{t}.parquet" for t in SHARD_TABLES)
PART_NAMES = (MANIFEST_PARQUET, STORES, *TABLE_PARTS)  # what the driver downloads of a task's


def build_shard_to_bucket(
    settings: Settings,
    shard: Shard,
    job: BucketShard,
    catalog: dict[str, pa.Table],
    stores: dict[str, pa.Table],
    *listings: pa.Table,
) -> ShardSummary:
    """Build `job`'s stores and upload their new versions and the shard's parts.

    `stores` holds the shard's rows of the stores tables, `listings` its part of each listings
    file. Each call is an attempt with a token of its own, so it never writes another's key."""
    started = time.perf_counter()
    scratch = settings.ray.scratch
    if scratch is not None:
        scratch.mkdir(parents=True, exist_ok=True)
    _sweep_scratch(Path(scratch or tempfile.gettempdir()))
    folder = Path(tempfile.mkdtemp(prefix=SCRATCH_PREFIX, dir=scratch))
    lock = (folder / f"{SCRATCH_LOCK}-new").open("w")
    fcntl.flock(lock, fcntl.LOCK_EX)  # held while the task lives: see `_sweep_scratch`
    os.rename(folder / f"{SCRATCH_LOCK}-new", folder / SCRATCH_LOCK)  # only once held
    attempt = secrets.token_hex(4)
    try:
        con, steps = shard_warehouse(settings, folder, catalog, stores, listings)
        try:
            previous = pl.from_arrow(job.previous)
            records = {
                key: StoreRecord(digest, channels, products, pages)
                for key, digest, channels, products, pages, _, _ in previous.iter_rows()  # type: ignore[union-attr]
            }
            (folder / SITE).mkdir()
            site = export.write_site(
                con,
                settings,
                folder / SITE,
                carried_records=records,
                common=False,  # the driver's, once every shard's rows are gathered
            )
            copy_tables(con, folder)
            sums = table_sums(con, "raw.listings")
        finally:
            con.close()
        doc = ShardDoc(job.inputs, sums, tuple((s.name, s.rows) for s in steps))
        up = publish_shard(
            job, shard.index, attempt, folder, site.manifest, site.stores, SHARD_TABLES, doc
        )
        return ShardSummary(
            shard,
            up.parts,
            site.counts,
            steps,
            sums,
            round(time.perf_counter() - started, 3),
            peak_rss_mb(),
            up.stores_new,
            up.puts,
            up.bytes,
        )
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        lock.close()


SCRATCH_PREFIX = "pipeline-shard-"
SCRATCH_LOCK = ".lock"


def _sweep_scratch(scratch: Path) -> None:
    """Remove the scratch folders of shard tasks that died on this node (a killed worker
    cleans nothing): a live task holds its folder's lock (`flock`, a node-local file), so a
    folder whose lock can be taken belongs to no task."""
    for folder in scratch.glob(f"{SCRATCH_PREFIX}*"):
        try:
            with (folder / SCRATCH_LOCK).open("r") as held:
                fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
                shutil.rmtree(folder, ignore_errors=True)
        except OSError:  # held by a live task, or no lock yet (one starting): left alone
            continue
