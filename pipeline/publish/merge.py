"""One release from the outputs of `pipeline build --shard I/N` for every I: the union of their
sites (hard links, no bytes copied), identical to the build without shards."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson
import polars as pl

from pipeline.api.urls import STORES_DIR, store_column
from pipeline.contract import TABLES
from pipeline.errors import BuildError
from pipeline.export import Site, report, write_release_files
from pipeline.export.digests import load_store_records
from pipeline.export.manifest import Manifest, file_counts
from pipeline.export.state import SEALED, damage, previous_pages, previous_volumes, seal
from pipeline.export.writer import SiteWriter
from pipeline.paths import (
    CURRENT,
    HISTORY,
    POOL,
    PUBLISHED,
    RELEASES,
    REPORT_JSON,
    SITE,
    WAREHOUSE,
    WORK,
    published_release,
)
from pipeline.publish.release import (
    BuildResult,
    check_release,
    exclusive,
    new_build_id,
    publish,
    store_folders,
)
from pipeline.settings import SITE_FILES, Settings, Shard
from pipeline.transform.audit import check_volumes


def merge(shard_outputs: list[Path], settings: Settings) -> BuildResult:
    """Publish one release from every shard's published build (see the module's docstring)."""
    with exclusive(settings.output):
        return _merge(shard_outputs, settings)


def _merge(shard_outputs: list[Path], settings: Settings) -> BuildResult:
    output = settings.output
    build_id = new_build_id()
    work, release = output / WORK / build_id, output / RELEASES / build_id
    work.mkdir(parents=True)
    started = time.perf_counter()
    previous = previous_pages(published_release(output))
    reports = []
    releases = [(s / CURRENT).resolve() for s in shard_outputs]
    for shard_output, shard_release in zip(shard_outputs, releases, strict=True):
        if not (shard_release / PUBLISHED).exists():
            raise BuildError(f"{shard_output}: no published shard build")
        for name in SEALED:
            problem = damage(shard_release, name)
            if problem:
                raise BuildError(f"{problem}: build that shard again")
        reports.append(orjson.loads((shard_release / REPORT_JSON).read_bytes()))
    check_shards(reports, shard_outputs)
    manifest = union_sites(release, work, [(r / SITE, Manifest.load(r)) for r in releases])
    published, problem = previous_volumes(published_release(output))
    tables = reports[0]["tables"]  # every shard ingested and checked every table
    tonight = {
        f"{t.group}/{t.name}": tables[t.name]["accepted"] for t in TABLES if t.name in tables
    }
    moves = check_volumes(published, {**tonight, SITE_FILES: len(manifest)}, settings)
    changed, removed = manifest.changes(previous.manifest)
    stores = {key: r for shard in releases for key, r in load_store_records(shard).items()}
    counts = file_counts(manifest, changed, removed)
    write_release_files(release, Site(manifest, changed, removed, stores, counts), settings)
    # Every shard built the whole warehouse from the same input: the first one's serves, with
    # its history.
    for name in (WAREHOUSE, HISTORY):
        first = releases[0] / name
        target = work / name if name == WAREHOUSE else release / name
        if first.is_file():
            try:
                os.link(first, target)
            except OSError:
                shutil.copyfile(first, target)
    summary = dict(reports[0])
    summary["build_id"] = build_id
    summary["merged_from"] = [r["build_id"] for r in reports]
    summary["site"] = {
        key: sum(r["site"].get(key, 0) for r in reports) for key in reports[0]["site"]
    }
    summary["site"].update(counts)
    summary["stages_seconds"] = {"merge": round(time.perf_counter() - started, 3)}
    shards_warnings = [w for r in reports for w in r.get("build_warnings", [])]
    merge_warnings = [p for p in (previous.problem, problem, *moves) if p]
    summary["build_warnings"] = list(dict.fromkeys(shards_warnings + merge_warnings))
    report.write(release, summary)
    seal(release)
    check_release(release, manifest)
    summary["build_warnings"] += publish(output, work / WAREHOUSE, release, settings.releases_kept)
    shutil.rmtree(work, ignore_errors=True)
    return BuildResult(build_id, release, summary, summary["stages_seconds"])


def check_shards(reports: list[dict[str, Any]], outputs: list[Path]) -> None:
    """Every shard of one count came exactly once, all built from the same inputs."""
    shards: list[Shard] = []
    for report_, output in zip(reports, outputs, strict=True):
        if report_.get("shard") is None:
            raise BuildError(f"{output}: not a shard build (--shard I/N)")
        shards.append(Shard.from_text(report_["shard"]))
    count = shards[0].count
    if sorted(shards) != [Shard(i, count) for i in range(count)]:
        listed = ", ".join(map(str, shards))
        raise BuildError(f"shards {listed}: not every shard of {count} exactly once")
    for report_, output in zip(reports, outputs, strict=True):
        if report_.get("inputs_digest") is None:  # a build of a version that did not say
            raise BuildError(f"{output}: the shard build names no inputs digest: build it again")
    if len({r["inputs_digest"] for r in reports}) != 1:
        raise BuildError("the shards were built from different inputs or export settings")


def union_sites(release: Path, work: Path, sites: Sequence[tuple[Path, Manifest]]) -> Manifest:
    """The site of `release` as the union of shards' sites (each with its manifest), without a
    byte copied: a store folder a shard wrote into this output's pool is linked as it is; one
    in another output's pool is taken into this one under the same name, its files hard-linked;
    every other file is hard-linked. A path written by two shards is refused. Returns the
    union's manifest."""
    parts = [m.frame.with_columns(site=pl.lit(str(site))) for site, m in sites]
    combined = pl.concat(parts) if parts else Manifest().frame.with_columns(site=pl.lit(""))
    try:
        manifest = Manifest(combined)
    except ValueError as exc:  # a file in two shards
        raise BuildError(f"{exc} (written by two shards)") from None
    output = release.parent.parent
    pool = output / POOL
    pool.mkdir(exist_ok=True)
    linked: list[str] = []  # the stores whose folder is this pool's already
    with SiteWriter(release / SITE, pool=pool, staging=work / POOL) as writer:
        for site, _ in sites:  # each shard's store folders, under the same names
            for key, folder in store_folders(site).items():
                if (site / STORES_DIR / key).resolve() == (pool / folder).resolve():
                    writer.link_store(key, folder)
                    linked.append(key)
                else:
                    writer.open_store(key, folder)
        store = store_column(pl.col("path"))
        in_linked = store.is_in(linked).fill_null(False)
        for name, site in combined.filter(~in_linked).select("path", "site").iter_rows():
            writer.adopt(site, name)
    return manifest
