"""`pipeline build --engine ray`: the same build on a Ray cluster, by the same stages (the
driver and its finalize step; the tasks in `tasks`). The catalog is built once on the driver;
each shard of stores is built by a task over only its rows, so no task reads every listing;
the driver unions the shards and ends with the one-machine build's own release tail
(`Night.finish`), so the two publish the same release. Nothing is published before every shard
finished. With `ray.to` (`--to s3://...`), the shards share nothing but the bucket: each builds
in scratch of its own and uploads its stores' versions and its parts, and the driver composes
and commits the release from them (`_bucket_night`, `parts`). The steps, retries and the
shared output directory: README, "The build on a Ray cluster"."""

from __future__ import annotations

import hashlib
import shutil
import time
from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from pipeline import db, transform
from pipeline.api.urls import store_column
from pipeline.contract import TABLES, TABLES_BY_NAME
from pipeline.distributed.cluster import connected
from pipeline.distributed.parts import (
    BucketShard,
    compose_manifest,
    fetch_manifest,
    fetch_parts,
    read_records,
    records_by_shard,
)
from pipeline.distributed.tasks import (
    PART_NAMES,
    SHARD_TABLES,
    IngestedPart,
    ShardResult,
    ShardSummary,
    build_shard,
    build_shard_to_bucket,
    ingest_listings,
    split_by_shard,
)
from pipeline.errors import BuildError
from pipeline.export import Site
from pipeline.export.records.digests import (
    StoreRecord,
    TableSums,
    add_sums,
    inputs_digest,
    table_sums,
)
from pipeline.export.records.manifest import Manifest, file_counts
from pipeline.export.records.report import BucketFigures, DistributedFigures
from pipeline.export.records.state import previous_pages
from pipeline.ingest import IngestedTable, check_input, ingest_table, raw_types, remote, table_files
from pipeline.ingest.files import InputFile
from pipeline.ingest.raw import comment_raw_table, create_raw_table
from pipeline.ingest.remote import RemoteFile, RemoteInput, downloaded, list_input
from pipeline.paths import INPUT, MANIFEST_PARQUET
from pipeline.progress import SILENT, Reporter
from pipeline.publish.bucket import RELEASES as BUCKET_RELEASES
from pipeline.publish.bucket import Release, check_url
from pipeline.publish.merge import union_sites
from pipeline.publish.night import Night
from pipeline.publish.objectstore import NightStart, commit_night, start_night
from pipeline.publish.release import BuildResult, exclusive
from pipeline.settings import Settings, Shard
from pipeline.transform import StepResult
from pipeline.transform.steps import CATALOG_STEPS, STORE_STEPS, STORE_TABLES

LISTINGS = TABLES_BY_NAME["listings"]
SHARDS_DIR = "shards"  # in the release: each shard's raw listing rows, as Parquet
# The catalog's tables every shard reads: what the catalog's steps build.
CATALOG_TABLES = tuple(s.file.table for s in CATALOG_STEPS)


def build_on_ray(settings: Settings, reporter: Reporter = SILENT) -> BuildResult:
    if settings.ray.to is not None:
        check_url(settings.ray.to)  # before a cluster is started for nothing
    with exclusive(settings.output):
        night = Night(settings, reporter)
        started = time.perf_counter()
        with connected(settings.ray) as ray:
            night.stages["engine"] = round(time.perf_counter() - started, 3)
            return _build(night, ray)


def _build(night: Night, ray: Any) -> BuildResult:
    settings, config = night.settings, night.settings.ray
    shards = config.shards
    options = {"max_retries": config.retries, "retry_exceptions": False}
    # A night straight to a bucket reads its committed state first: the pointer's ETag fences
    # the commit, and its stores' records decide what is carried.
    start = start_night(config.to) if config.to else None
    con = night.connect()
    try:
        db.create_schemas(con)
        with night.stage("ingest", len(TABLES), "tables") as advance:
            listed = _listings(con, settings.input)
            files, typed = listed.files, listed.typed
            task = ray.remote(ingest_listings).options(num_returns=shards + 1, **options)
            parts = [
                task.remote(listed.input_dir, f, typed, shards, settings.max_columns) for f in files
            ]
            ingested = {}
            with _other_tables(listed, night.work / INPUT) as input_dir:
                for table in TABLES:
                    if table is not LISTINGS:
                        ingested[table.name] = ingest_table(
                            con, input_dir, table, settings.max_columns
                        )
                    advance(1)
            read: list[IngestedPart] = ray.get([p[0] for p in parts])
            file_sums = [r.sums for r in read]
            names = listed.names
            rows = add_sums(file_sums)[0]
            ingested[LISTINGS.name] = IngestedTable(LISTINGS, names, rows)
        with night.stage("catalog", len(CATALOG_STEPS), "steps") as advance:
            steps = transform.run_steps(con, advance, CATALOG_STEPS)
            catalog = ray.put(
                {t: con.sql(f"SELECT * FROM {t}").to_arrow_table() for t in CATALOG_TABLES}
            )
            stores = {
                f"raw.{t}": split_by_shard(con, f"raw.{t}", shards)
                for t in STORE_TABLES
                if t != LISTINGS.name
            }
            _store_tables_emptied(con, typed)
            empty = con.sql("SELECT * FROM raw.listings").to_arrow_table()
        listings_parts = [[p[i + 1] for p in parts] for i in range(shards)]
        shard_stores = [{name: cut[i] for name, cut in stores.items()} for i in range(shards)]
        if start is not None:
            handed = _Handed(
                catalog,
                shard_stores,
                empty,
                listings_parts,
                ingested,
                steps,
                read,
                file_sums,
                len(files),
            )
            return _bucket_night(night, ray, con, start, handed)
        with night.stage("shards", shards, "shards") as advance:
            task = ray.remote(build_shard).options(num_cpus=config.cpus_per_shard, **options)
            pending = [
                task.remote(
                    settings,
                    Shard(i, shards),
                    night.work / SHARDS_DIR / str(i),
                    night.previous,
                    catalog,
                    shard_stores[i],
                    empty,
                    *listings_parts[i],
                )
                for i in range(shards)
            ]
            results: list[ShardResult] = []
            while pending:  # as they finish, for the progress
                done, pending = ray.wait(pending)
                results += ray.get(done)
                advance(len(done))
        with night.stage("finalize"):
            results.sort(key=lambda r: r.shard)
            _check_shards(results, shards, add_sums(file_sums))
            _gather_tables(con, [[r.parquet(t) for r in results] for t in SHARD_TABLES])
            steps += _store_steps(results)
            ordered = [ingested[t.name] for t in TABLES]
            night.audit(con, ordered, steps)
            site = _union_site(night, results)
            sums = {t.name: table_sums(con, f"raw.{t.name}") for t in TABLES if t is not LISTINGS}
            sums[LISTINGS.name] = add_sums(file_sums)
            _keep_listings_rows(con, night, [r.parquet("raw.listings") for r in results])
            night.distributed = _figures(shards, len(files), read, results)
    except BaseException:
        con.close()
        raise
    return night.finish(con, site, ordered, steps, inputs_digest(sums, settings.export))


@dataclass(frozen=True)
class _Listings:
    """The listings' files as their tasks are handed them: a local input's by path under its
    directory (which every worker reads); an object-store input's as descriptions of their
    objects, which each task downloads to its own machine (`input_dir` None, `remote` the
    listing the driver reads the other tables from)."""

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
    """The stores' tables, empty and documented, for the shards' rows: the raw ones (their rows
    were cut by shard; `raw.listings` with the listings files' types), and what the stores'
    steps build over them."""
    for name in STORE_TABLES:
        if name == LISTINGS.name:
            create_raw_table(con, LISTINGS, typed)
            comment_raw_table(con, LISTINGS)
        else:
            con.execute(f"DELETE FROM raw.{name}")
    transform.run_steps(con, steps=STORE_STEPS)


def _check_shards(
    results: Sequence[ShardResult | ShardSummary], shards: int, listings: TableSums
) -> None:
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


def _gather_tables(con: duckdb.DuckDBPyConnection, parquet: list[list[Path]]) -> None:
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


def _store_steps(results: Sequence[ShardResult | ShardSummary]) -> list[StepResult]:
    """The stores' steps over every shard: their rows added up, the longest shard's seconds."""
    return [
        StepResult(
            step.name,
            sum(r.steps[i].rows for r in results),
            max(r.steps[i].seconds for r in results),
        )
        for i, step in enumerate(results[0].steps)
    ]


def _union_site(night: Night, results: list[ShardResult]) -> Site:
    """The release's site from the shards' (`union_sites`), with its changes since the
    published release and the counts the report gives."""
    sites = [(r.site, Manifest(pl.from_arrow(r.manifest))) for r in results]  # type: ignore[arg-type]
    manifest = union_sites(night.release, night.work, sites)
    previous = previous_pages(night.previous)
    changed, removed = manifest.changes(previous.manifest)
    counts: dict[str, int] = {}
    for result in results:
        for key, value in result.counts.items():
            counts[key] = counts.get(key, 0) + value
    counts.update(file_counts(manifest, changed, removed))
    stores = {key: record for r in results for key, record in r.stores.items()}
    return Site(manifest, changed, removed, stores, counts, previous.problem)


def _keep_listings_rows(con: duckdb.DuckDBPyConnection, night: Night, files: list[Path]) -> None:
    """The listings' raw rows stay as each shard's Parquet (`files`, shard by shard), in the
    release's `shards/<i>/`; the warehouse drops its empty raw.listings."""
    for index, file in enumerate(files):
        target = night.release / SHARDS_DIR / str(index)
        target.mkdir(parents=True)
        shutil.move(file, target / "raw.listings.parquet")
    con.execute("DROP TABLE raw.listings")


def _figures(
    shards: int,
    listings_files: int,
    read: Sequence[IngestedPart],
    results: Sequence[ShardResult | ShardSummary],
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


def _bucket_night(
    night: Night,
    ray: Any,
    con: duckdb.DuckDBPyConnection,
    start: NightStart,
    handed: _Handed,
) -> BuildResult:
    """The shards and the finalize of a night straight to a bucket (`parts`): each shard task
    gets its rows and its stores' records at the night's start, and returns a summary naming
    its parts; the finalize downloads the parts, gathers the warehouse and composes the
    manifest from them, ends with the one release tail (`Night.finish`: the local release
    holds no page) and commits the release to the bucket (`commit_night`), fenced by the
    pointer read at the start. Closes `con`."""
    settings, config = night.settings, night.settings.ray
    shards = config.shards
    try:
        with night.stage("shards", shards, "shards") as advance:
            options = {"max_retries": config.retries, "retry_exceptions": False}
            task = ray.remote(build_shard_to_bucket)
            task = task.options(num_cpus=config.cpus_per_shard, **options)
            previous = records_by_shard(start.records, shards)
            common = start.current.common if start.current is not None else None
            build = f"{night.build_id}.{start.token}"
            pending = [
                task.remote(
                    settings,
                    Shard(i, shards),
                    BucketShard(start.url, build, start.token, previous[i], common),
                    handed.catalog,
                    handed.stores[i],
                    handed.empty,
                    *handed.listings[i],
                )
                for i in range(shards)
            ]
            results: list[ShardSummary] = []
            while pending:  # as they finish, for the progress
                done, pending = ray.wait(pending)
                results += ray.get(done)
                advance(len(done))
        with night.stage("finalize"):
            results.sort(key=lambda r: r.shard)
            _check_shards(results, shards, add_sums(handed.file_sums))
            folders = [night.work / PARTS_DIR / str(r.shard.index) for r in results]
            for summary, folder in zip(results, folders, strict=True):
                fetch_parts(start.url, summary.parts, PART_NAMES, folder)
            _gather_tables(con, [[f / f"{t}.parquet" for f in folders] for t in SHARD_TABLES])
            steps = [*handed.steps, *_store_steps(results)]
            ordered = [handed.ingested[t.name] for t in TABLES]
            night.audit(con, ordered, steps)
            site, base, versions = _bucket_site(night, start, results, folders)
            sums = {t.name: table_sums(con, f"raw.{t.name}") for t in TABLES if t is not LISTINGS}
            sums[LISTINGS.name] = add_sums(handed.file_sums)
            _keep_listings_rows(con, night, [f / "raw.listings.parquet" for f in folders])
            night.distributed = _figures(shards, handed.listings_files, handed.read, results)
            night.distributed.bucket = BucketFigures(
                puts=sum(r.puts for r in results),
                bytes=sum(r.uploaded_bytes for r in results),
                stores_new=sum(r.stores_new for r in results),
            )
    except BaseException:
        con.close()
        raise
    result = night.finish(con, site, ordered, steps, inputs_digest(sums, settings.export))
    release_id = f"{night.build_id}.{start.token}"
    with (result.release / MANIFEST_PARQUET).open("rb") as fh:
        sealed = hashlib.file_digest(fh, "sha256").hexdigest()
    new = Release(
        release_id,
        night.build_id,
        results[0].common or "",
        versions,
        f"{BUCKET_RELEASES}{release_id}/{MANIFEST_PARQUET}",
        sealed,
        tuple(r.parts for r in results),
    )
    commit_night(start, result.release, new, site.manifest, base)
    return result


PARTS_DIR = "parts"  # in the night's work folder: the shards' parts, downloaded


@dataclass(frozen=True)
class _Handed:
    """What the ingest and the catalog stages hand the shards and the finalize."""

    catalog: Any  # the catalog's tables, in Ray's object store
    stores: list[dict[str, Any]]  # each shard's stores tables' rows
    empty: Any  # raw.listings, empty, with the files' types
    listings: list[list[Any]]  # each shard's parts of the listings files (object refs)
    ingested: dict[str, IngestedTable]
    steps: list[StepResult]
    read: list[IngestedPart]
    file_sums: list[TableSums]
    listings_files: int


def _bucket_site(
    night: Night, start: NightStart, results: list[ShardSummary], folders: list[Path]
) -> tuple[Site, Manifest, dict[str, str]]:
    """The release's site as the bucket will hold it: its manifest (`compose_manifest`: the
    shards' rows and the carried stores' rows of the release the night started from), its
    changes since that release, its stores' records and counts; with that release's manifest
    and the map store -> version."""
    records = read_records(folders)
    stores = {
        key: StoreRecord(digest, channels, products, pages)
        for key, digest, channels, products, pages, _ in records.iter_rows()
    }
    versions = {
        key: version
        for key, version in records.select("store_key", "version").iter_rows()
        if version is not None
    }
    base = Manifest()
    if start.current is not None:
        base = fetch_manifest(start.url, start.current, night.work / "previous-manifest.parquet")
    written = pl.scan_parquet([f / MANIFEST_PARQUET for f in folders])
    rendered = written.select(store=store_column(pl.col("path"))).unique().collect()
    carried = set(versions) - set(rendered["store"].drop_nulls().to_list())
    manifest = compose_manifest(folders, base, carried)
    changed, removed = manifest.changes(base)
    counts: dict[str, int] = {}
    for result in results:
        for key, value in result.counts.items():
            counts[key] = counts.get(key, 0) + value
    counts.update(file_counts(manifest, changed, removed))
    site = Site(manifest, changed, removed, stores, counts, pages_in=start.url)
    return site, base, versions
