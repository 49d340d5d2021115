"""A Ray night's shards and finalize, straight to the bucket. The driver commits the release to
the bucket before it swaps its local release in (docs/cluster.md, "How a night runs" and "A
night's commit")."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import duckdb
import orjson
import polars as pl

from pipeline import export
from pipeline.api.urls import BULK_INDEX
from pipeline.conductor import Conductor
from pipeline.contract import TABLES, TABLES_BY_NAME
from pipeline.distributed.bucket_shard import (
    PART_NAMES,
    TABLE_PARTS,
    ShardSummary,
    build_shard_to_bucket,
)
from pipeline.distributed.carry import carry_tables, keep_tables
from pipeline.distributed.compose import MEMORY, compose_release_files, previous_manifest
from pipeline.distributed.finalize import (
    check_shards,
    cluster_figures,
    gather_results,
    gather_tables,
    keep_listings_rows,
    market_steps,
    store_steps,
)
from pipeline.distributed.parts import (
    BucketShard,
    Common,
    common_file,
    fetch_parts,
    publish_common,
    read_records,
    records_by_shard,
)
from pipeline.distributed.reuse import lay_out_reused, reusable, reused_summary
from pipeline.distributed.shards import Shard
from pipeline.distributed.tasks import SHARD_TABLES, IngestedPart
from pipeline.export import Site
from pipeline.export.records.digests import (
    StoreRecord,
    TableSums,
    add_sums,
    inputs_digest,
    table_sums,
)
from pipeline.export.records.manifest import Manifest
from pipeline.export.records.report import BucketFigures
from pipeline.ingest import IngestedTable
from pipeline.paths import MANIFEST_PARQUET, SITE, STORES
from pipeline.publish.bucket import RELEASES as BUCKET_RELEASES
from pipeline.publish.bucket import VERSIONED_RECORDS, Release, sha256
from pipeline.publish.commit import NightStart, commit_night
from pipeline.publish.manifests import PARTS_LIST, list_bytes, release_parts
from pipeline.publish.release import BuildResult
from pipeline.transform import StepResult

LISTINGS = TABLES_BY_NAME["listings"]
PARTS_DIR = "parts"  # in the night's work folder: the shards' parts, downloaded
COUNTS = "counts.json"  # beside the driver's common pages: their counts for the report


@dataclass(frozen=True)
class DriverStages:
    """What the driver's ingest and catalog stages give the shards and the finalize."""

    catalog: Any  # the catalog's tables, in Ray's object store
    stores: list[dict[str, Any]]  # each shard's stores tables' rows
    empty: Any  # raw.listings, empty, with the files' types
    listings: list[list[Any]]  # each shard's parts of the listings files (object refs)
    ingested: dict[str, IngestedTable]
    steps: list[StepResult]
    read: list[IngestedPart]
    file_sums: list[TableSums]
    listings_files: int
    inputs: list[str]  # each shard's digest of what it is handed (`reuse.shard_inputs`)


def build_to_bucket(
    conductor: Conductor,
    ray: Any,
    con: duckdb.DuckDBPyConnection,
    start: NightStart,
    staged: DriverStages,
) -> BuildResult:
    """The night's shards, its finalize, its commit and its local swap. Closes `con`."""
    settings, config = conductor.settings, conductor.settings.ray
    shards = config.shards
    try:
        with conductor.stage("shards", shards, "shards") as advance:
            options = {"max_retries": config.retries, "retry_exceptions": False}
            task = ray.remote(build_shard_to_bucket)
            task = task.options(num_cpus=config.cpus_per_shard, **options)
            previous = records_by_shard(start.records, shards)
            build = f"{conductor.build_id}.{start.token}"
            reused = reusable(start, staged.inputs)
            results: list[ShardSummary] = [
                reused_summary(Shard(i, shards), prefix, doc, previous[i])
                for i, (prefix, doc) in reused.items()
            ]
            advance(len(results))
            pending = [
                task.remote(
                    settings,
                    Shard(i, shards),
                    BucketShard(start.url, build, start.token, previous[i], staged.inputs[i]),
                    staged.catalog,
                    staged.stores[i],
                    staged.empty,
                    *staged.listings[i],
                )
                for i in range(shards)
                if i not in reused
            ]
            results += gather_results(ray, pending, advance)
        with conductor.stage("finalize"):
            results.sort(key=lambda r: r.shard)
            check_shards(results, shards, add_sums(staged.file_sums))
            folders = [conductor.work / PARTS_DIR / str(r.shard.index) for r in results]
            downloaded = 0
            for summary, folder in zip(results, folders, strict=True):
                if summary.reused:  # its tables; its records are the night's start's
                    index = summary.shard.index
                    if not carry_tables(conductor.previous, index, summary.parts, folder):
                        downloaded += fetch_parts(start.url, summary.parts, TABLE_PARTS, folder)
                    lay_out_reused(folder, previous[index])
                else:
                    downloaded += fetch_parts(start.url, summary.parts, PART_NAMES, folder)
            gather_tables(con, [[f / f"{t}.parquet" for f in folders] for t in SHARD_TABLES])
            steps = [*staged.steps, *store_steps(results), *market_steps(con)]
            common = _common_pages(conductor, start, con)
            ordered = [staged.ingested[t.name] for t in TABLES]
            conductor.audit(con, ordered, steps)
            site, versions, shas = _bucket_site(
                conductor, start, results, [*folders, common.folder]
            )
            sums = {t.name: table_sums(con, f"raw.{t.name}") for t in TABLES if t is not LISTINGS}
            sums[LISTINGS.name] = add_sums(staged.file_sums)
            keep_listings_rows(con, conductor, [f / "raw.listings.parquet" for f in folders])
            keep_tables(conductor.release, folders, [r.parts for r in results])
            conductor.distributed = cluster_figures(
                shards, staged.listings_files, staged.read, results
            )
            conductor.distributed.bucket = BucketFigures(
                puts=sum(r.puts for r in results) + common.uploaded.puts,
                bytes=sum(r.uploaded_bytes for r in results) + common.uploaded.bytes,
                stores_new=sum(r.stores_new for r in results),
                shards_reused=len(reused),
                parts_downloaded_bytes=downloaded,
            )
    except BaseException:
        con.close()
        raise
    release_id = f"{conductor.build_id}.{start.token}"

    def commit(release: Path) -> list[str]:
        """The release to the bucket, before its local swap (`commit_night`), its manifest
        the list of its versions' parts."""
        new = Release(
            release_id,
            conductor.build_id,
            common.uploaded.version,
            versions,
            f"{BUCKET_RELEASES}{release_id}/{PARTS_LIST}",
            "",
            tuple(r.parts for r in results),
            common.uploaded.part_sha256.hex(),
        )
        listing = list_bytes(release_parts(new, shas, common.uploaded.part_sha256))
        new = replace(new, manifest_sha256=sha256(listing))
        return commit_night(start, release, new, listing, shas)

    digest = inputs_digest(sums, settings.export)
    return conductor.finish(con, site, ordered, steps, digest, commit=commit)


@dataclass(frozen=True)
class _CommonPages:
    folder: Path  # its site and its manifest part, as a shard's folder holds them
    uploaded: Common


def _common_pages(
    conductor: Conductor, start: NightStart, con: duckdb.DuckDBPyConnection
) -> _CommonPages:
    """The pages common to all stores, written by the driver over the gathered tables and
    uploaded as the night's common version (`parts.publish_common`), with their manifest part
    and their counts beside them for `_bucket_site`."""
    folder = conductor.work / PARTS_DIR / "common"
    (folder / SITE).mkdir(parents=True)
    previous = start.current.common if start.current is not None else None
    site = export.write_site(
        con,
        conductor.settings,
        folder / SITE,
        stores=False,
        common=True,
        started=conductor.started_at,
        build_id=conductor.build_id,
        previous_index=common_file(start.url, previous, str(BULK_INDEX)),
    )
    site.manifest.frame.write_parquet(folder / MANIFEST_PARQUET, statistics=False)
    pl.DataFrame(schema=VERSIONED_RECORDS).write_parquet(folder / STORES)
    (folder / COUNTS).write_bytes(orjson.dumps(site.counts))
    uploaded = publish_common(start.url, start.token, start.current, folder, site.manifest)
    return _CommonPages(folder, uploaded)


def _bucket_site(
    conductor: Conductor, start: NightStart, results: list[ShardSummary], folders: list[Path]
) -> tuple[Site, dict[str, str], dict[str, bytes]]:
    """The release's site as the bucket will hold it, its manifest and changes composed on
    disk (`compose_release_files`), its map store -> version, and each store's manifest
    part's SHA-256."""
    records = read_records(folders)
    stores = {
        key: StoreRecord(digest, channels, products, pages)
        for key, digest, channels, products, pages, _, _ in records.iter_rows()
    }
    versions, shas = {}, {}
    for key, version, sha in records.select("store_key", "version", "part_sha256").iter_rows():
        if version is not None:
            versions[key], shas[key] = version, sha
    base = None
    if start.current is not None:
        base = previous_manifest(start, conductor.previous, conductor.work)
    composed = conductor.work / "composed"
    parts = [f / MANIFEST_PARQUET for f in folders]
    counts: dict[str, int] = {}
    common = orjson.loads((folders[-1] / COUNTS).read_bytes())
    for found in [*(r.counts for r in results), common]:
        for key, value in found.items():
            counts[key] = counts.get(key, 0) + value
    counts.update(compose_release_files(composed, parts, base, list(versions), MEMORY))
    none = pl.Series("path", [], pl.String)
    site = Site(Manifest(), none, none, stores, counts, pages_in=start.url, composed=composed)
    return site, versions, shas
