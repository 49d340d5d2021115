"""One release from the outputs of `pipeline build --shard I/N` for every I: the union of their
sites (hard links, no bytes copied), identical to the build without shards. Every shard built
the whole warehouse from the same input: the first one's is copied (the merge records its own
build in its meta.build_run, the shards' histories are theirs), and the merge ends with the
release tail every build shares (`publish.night`): the guards, against this output's published
build, the history carried from it, the report, the seal, the check and the swap."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path

import duckdb
import polars as pl

from pipeline.api.urls import STORES_DIR, store_column
from pipeline.contract import TABLES_BY_NAME
from pipeline.errors import BuildError
from pipeline.export import Site
from pipeline.export.records.digests import load_store_records
from pipeline.export.records.manifest import Manifest, file_counts
from pipeline.export.records.report import BuildReport
from pipeline.export.records.state import (
    SEALED,
    STATE_FORMAT,
    damage,
    previous_pages,
    release_format,
)
from pipeline.export.writer import SiteWriter
from pipeline.ingest import IngestedTable
from pipeline.paths import CURRENT, POOL, PUBLISHED, REPORT_JSON, SITE, WAREHOUSE
from pipeline.progress import SILENT, Reporter
from pipeline.publish.night import Night
from pipeline.publish.release import BuildResult, exclusive, store_folders
from pipeline.settings import Settings
from pipeline.shard import Shard
from pipeline.transform import StepResult


def merge(
    shard_outputs: list[Path], settings: Settings, reporter: Reporter = SILENT
) -> BuildResult:
    """Publish one release from every shard's published build (see the module's docstring)."""
    with exclusive(settings.output):
        releases, reports = _shard_builds(shard_outputs)
        digest = check_shards(reports, shard_outputs)
        return _merge(Night(settings, reporter), releases, reports, digest)


def _shard_builds(shard_outputs: list[Path]) -> tuple[list[Path], list[BuildReport]]:
    """Each shard output's published release and its report, checked: published, of this
    version's state format, its state sealed and whole, its report readable."""
    reports = []
    releases = [(s / CURRENT).resolve() for s in shard_outputs]
    for shard_output, shard_release in zip(shard_outputs, releases, strict=True):
        if not (shard_release / PUBLISHED).exists():
            raise BuildError(f"{shard_output}: no published shard build")
        found = release_format(shard_release)
        if found != STATE_FORMAT:
            raise BuildError(
                f"{shard_release}: state format {found}, not this version's {STATE_FORMAT}: "
                "build that shard again"
            )
        for name in SEALED:
            problem = damage(shard_release, name)
            if problem:
                raise BuildError(f"{problem}: build that shard again")
        try:
            reports.append(BuildReport.read(shard_release))
        except (OSError, ValueError) as exc:
            raise BuildError(
                f"{shard_release / REPORT_JSON}: cannot be read ({exc}): build that shard again"
            ) from None
    return releases, reports


def _merge(
    night: Night, releases: list[Path], reports: list[BuildReport], inputs_digest: str
) -> BuildResult:
    first = reports[0]  # every shard ingested and checked every table alike
    ingested = [
        IngestedTable(TABLES_BY_NAME[name], tuple(t.files), t.rows)
        for name, t in first.tables.items()
    ]
    steps = [StepResult(s.name, s.rows, s.seconds) for s in first.steps]
    with night.stage("merge"):
        con = _warehouse(night, releases[0])
        try:
            for shard_report in reports:
                for problem in shard_report.build_warnings:
                    night.warn(problem)
            night.audit(con, ingested, steps)
            site = _union_site(night, releases, reports)
        except BaseException:
            con.close()
            raise
    night.input = first.input
    night.merged_from = [r.build_id for r in reports]
    return night.finish(con, site, ingested, steps, inputs_digest)


def _warehouse(night: Night, first: Path) -> duckdb.DuckDBPyConnection:
    """The first shard's warehouse, copied (the merge writes its history into it, never into a
    published file), without the shard's history: the tail carries this output's."""
    shutil.copyfile(first / WAREHOUSE, night.warehouse)
    con = night.connect()
    try:
        con.execute("DROP TABLE IF EXISTS meta.build_run")
    except BaseException:
        con.close()
        raise
    return con


def _union_site(night: Night, releases: list[Path], reports: list[BuildReport]) -> Site:
    """The release's site as the union of the shards' (`union_sites`), with its changes since
    this output's published release, the stores' records and the counts the report gives."""
    previous = previous_pages(night.previous)
    manifest = union_sites(
        night.release, night.work, [(r / SITE, Manifest.load(r)) for r in releases]
    )
    changed, removed = manifest.changes(previous.changes_base)
    stores = {key: r for shard in releases for key, r in load_store_records(shard).items()}
    shards = [r.site.model_dump() for r in reports]
    counts = {key: sum(s[key] for s in shards) for key in shards[0]}
    counts.update(file_counts(manifest, changed, removed))
    return Site(manifest, changed, removed, stores, counts, previous.problem)


def check_shards(reports: list[BuildReport], outputs: list[Path]) -> str:
    """Every shard of one count came exactly once, all built from the same inputs: their
    inputs digest."""
    shards: list[Shard] = []
    for report_, output in zip(reports, outputs, strict=True):
        if report_.shard is None:
            raise BuildError(f"{output}: not a shard build (--shard I/N)")
        shards.append(Shard.from_text(report_.shard))
    count = shards[0].count
    if sorted(shards) != [Shard(i, count) for i in range(count)]:
        listed = ", ".join(map(str, shards))
        raise BuildError(f"shards {listed}: not every shard of {count} exactly once")
    digests = {r.inputs_digest for r in reports}  # every build of this format names its own
    digest = digests.pop()
    if digests or digest is None:
        raise BuildError("the shards were built from different inputs or export settings")
    return digest


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
