"""`pipeline ray-build`: the night on a Ray cluster, straight to a bucket, by the one-machine
build's stages (docs/cluster.md, "How a night runs")."""

from __future__ import annotations

import time
from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from pipeline import db, transform
from pipeline.conductor import Conductor
from pipeline.contract import TABLES, TABLES_BY_NAME
from pipeline.distributed.bucket_night import DriverStages, build_to_bucket
from pipeline.distributed.cluster import check_cluster, connected
from pipeline.distributed.reuse import shard_inputs
from pipeline.distributed.tasks import IngestedPart, ingest_listings, split_by_shard
from pipeline.errors import BuildError
from pipeline.export.records.digests import add_sums
from pipeline.ingest import IngestedTable, check_input, ingest_table, raw_types, remote, table_files
from pipeline.ingest.files import InputFile
from pipeline.ingest.raw import create_raw_table
from pipeline.ingest.remote import RemoteFile, RemoteInput, downloaded, list_input
from pipeline.paths import INPUT
from pipeline.progress import SILENT, Reporter
from pipeline.publish.bucket import check_url
from pipeline.publish.commit import NightStart, catch_up, start_night
from pipeline.publish.release import BuildResult, exclusive
from pipeline.settings import Settings
from pipeline.transform.steps import CATALOG_STEPS, STORE_STEPS, STORE_TABLES

LISTINGS = TABLES_BY_NAME["listings"]
# The catalog's tables every shard reads: what the catalog's steps build.
CATALOG_TABLES = tuple(s.file.table for s in CATALOG_STEPS)
NO_BUCKET = "a Ray night publishes to a bucket: give --to s3://bucket/prefix (or publish.to)"


def build_on_ray(settings: Settings, reporter: Reporter = SILENT) -> BuildResult:
    to = settings.publish.to
    if to is None:
        raise BuildError(NO_BUCKET)
    check_url(to)  # before a cluster is started for nothing
    check_cluster(settings.ray)  # the same
    with exclusive(settings.output):
        # The night reads the bucket's committed state first: the pointer's ETag fences the
        # commit, and its stores' records decide what is carried. A release the bucket
        # committed before a night stopped short of its local swap goes live here first
        # (`catch_up`), for this night to follow it.
        start = start_night(to)
        settled = catch_up(settings.output, start, settings.build.releases_kept)
        conductor = Conductor(settings, reporter)
        for line in settled:
            conductor.warn(line)
        started = time.perf_counter()
        with connected(settings.ray) as ray:
            conductor.stages["engine"] = round(time.perf_counter() - started, 3)
            return _build(conductor, ray, start)


def _build(conductor: Conductor, ray: Any, start: NightStart) -> BuildResult:
    settings, config = conductor.settings, conductor.settings.ray
    shards = config.shards
    options = {"max_retries": config.retries, "retry_exceptions": False}
    con = conductor.connect()
    try:
        db.create_schemas(con)
        with conductor.stage("ingest", len(TABLES), "tables") as advance:
            listed = _listings(con, settings.input)
            files, typed = listed.files, listed.typed
            task = ray.remote(ingest_listings).options(num_returns=shards + 1, **options)
            parts = [
                task.remote(listed.input_dir, f, typed, shards, settings.build.max_columns)
                for f in files
            ]
            ingested = {}
            with _other_tables(listed, conductor.work / INPUT) as input_dir:
                for table in TABLES:
                    if table is not LISTINGS:
                        ingested[table.name] = ingest_table(
                            con, input_dir, table, settings.build.max_columns
                        )
                    advance(1)
            read: list[IngestedPart] = ray.get([p[0] for p in parts])
            file_sums = [r.sums for r in read]
            names = listed.names
            rows = add_sums(file_sums)[0]
            ingested[LISTINGS.name] = IngestedTable(LISTINGS, names, rows)
        with conductor.stage("catalog", len(CATALOG_STEPS), "steps") as advance:
            steps = transform.run_steps(con, advance, CATALOG_STEPS)
            catalog = ray.put(
                {t: con.sql(f"SELECT * FROM {t}").to_arrow_table() for t in CATALOG_TABLES}
            )
            stores = {
                f"raw.{t}": split_by_shard(con, f"raw.{t}", shards)
                for t in STORE_TABLES
                if t != LISTINGS.name
            }
            shard_stores = [{n: cut[i] for n, cut in stores.items()} for i in range(shards)]
            # What tells the night which shards it need not build.
            listings = (names, typed)
            inputs = shard_inputs(settings, con, CATALOG_TABLES, listings, shard_stores, read)
            _store_tables_emptied(con, typed)
            empty = con.sql("SELECT * FROM raw.listings").to_arrow_table()
        staged = DriverStages(
            catalog=catalog,
            stores=shard_stores,
            empty=empty,
            listings=[[p[i + 1] for p in parts] for i in range(shards)],
            ingested=ingested,
            steps=steps,
            read=read,
            file_sums=file_sums,
            listings_files=len(files),
            inputs=inputs,
        )
    except BaseException:
        con.close()
        raise
    return build_to_bucket(conductor, ray, con, start, staged)


@dataclass(frozen=True)
class _Listings:
    """The listings' files as their tasks are handed them. A local input's are paths under
    `input_dir`, which every worker reads. An input bucket's are objects, which each task
    downloads itself; `remote` is the listing the driver reads the other tables from."""

    input_dir: Path | None
    files: Sequence[InputFile | RemoteFile]
    typed: dict[str, str]
    names: tuple[str, ...]  # their source names, relative to the input
    remote: RemoteInput | None = None


def _listings(con: duckdb.DuckDBPyConnection, source: Path | str) -> _Listings:
    """The input checked and listed once; the listings' files and the types they load with."""
    if isinstance(source, Path):
        check_input(source)
        files = table_files(source, LISTINGS)
        names = tuple(f.source(source) for f in files)
        return _Listings(source, files, raw_types(con, LISTINGS, files), names)
    listing = list_input(source)
    objects = listing.files(LISTINGS)
    typed = remote.raw_types(con, LISTINGS, objects)
    return _Listings(None, objects, typed, tuple(f.key for f in objects), listing)


def _other_tables(listed: _Listings, scratch: Path) -> AbstractContextManager[Path]:
    """The input directory the driver ingests the other tables from: a local input's own, or
    their objects downloaded under `scratch` (the listings' are not: their tasks read them)."""
    if listed.remote is None:
        assert listed.input_dir is not None
        return nullcontext(listed.input_dir)
    others = [t for t in TABLES if t is not LISTINGS]
    return downloaded(listed.remote, scratch, others)


def _store_tables_emptied(con: duckdb.DuckDBPyConnection, typed: dict[str, str]) -> None:
    """The stores' tables, empty, for the shards' rows: the raw ones (their rows
    were cut by shard; `raw.listings` with the listings files' types), and what the stores'
    steps build over them."""
    for name in STORE_TABLES:
        if name == LISTINGS.name:
            create_raw_table(con, LISTINGS, typed)
        else:
            con.execute(f"DELETE FROM raw.{name}")
    transform.run_steps(con, steps=STORE_STEPS)
