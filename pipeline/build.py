"""The nightly build: ingest -> transform -> audit -> export -> publish.

Everything is built beside the published outputs and published by renames, so that readers see
the old build or the new one:

    OUTPUT/releases/<build_id>/        warehouse.duckdb, site/, manifest.json (and .parquet),
                                       stores.parquet, changes.json, build_report.json|.html,
                                       nginx.conf, .published
    OUTPUT/current -> releases/<id>    swapped by one rename: the commit point
    OUTPUT/warehouse.duckdb, site, manifest.json, build_report.*, nginx.conf
                                       stable links through `current`
    OUTPUT/.work/<build_id>/           the warehouse being built (kept after a failure, for a
                                       look; removed by the next build)

A build killed at any moment leaves `current` on the previous release; the next build removes
what the killed one left behind.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import secrets
import shutil
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import orjson
import polars as pl

from pipeline import db, export, ingest, nginx, report, transform
from pipeline.contract import TABLES
from pipeline.progress import SILENT, Reporter
from pipeline.settings import Settings
from pipeline.steps import STEPS

WAREHOUSE = "warehouse.duckdb"
LINKS = (
    WAREHOUSE,
    "site",
    "manifest.json",
    "changes.json",
    "build_report.json",
    "build_report.html",
    "nginx.conf",
)
PUBLISHED = ".published"  # marks a release whose build completed
POOL = "pages"  # stores' page folders, shared by the releases that link to them


class BuildError(Exception):
    """A handled build failure: the message names the file or table and what is wrong."""


@dataclass
class BuildResult:
    build_id: str
    release: Path
    report: dict[str, Any]
    stage_seconds: dict[str, float] = field(default_factory=dict)


@contextmanager
def _timed(stages: dict[str, float], name: str) -> Iterator[None]:
    started = time.perf_counter()
    yield
    stages[name] = round(time.perf_counter() - started, 3)


def new_build_id() -> str:
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3)


def audit(con: duckdb.DuckDBPyConnection, settings: Settings) -> None:
    """Stop the build when the input is too broken to publish."""
    if db.count_rows(con, "staging.products") == 0:
        raise BuildError("catalog/products: no usable product rows (empty catalog)")
    rejected = report.rejected_rows(con)
    for table in TABLES:
        raw_rows, bad = db.count_rows(con, f"raw.{table.name}"), rejected.get(table.name, 0)
        if raw_rows and bad / raw_rows > settings.max_reject_share:
            raise BuildError(
                f"{table.group}/{table.name}: {bad} of {raw_rows} rows rejected "
                f"({bad / raw_rows:.1%}, above max_reject_share "
                f"{settings.max_reject_share:.1%}); the rows are in meta.rejects"
            )


def _write_release_files(
    release: Path,
    manifest: export.Manifest,
    changed: pl.Series,
    removed: pl.Series,
    settings: Settings,
) -> None:
    """The release's manifest, changes since the published release and nginx configuration."""
    manifest.write(release)
    export.write_changes(release / "changes.json", changed, removed)
    (release / "nginx.conf").write_text(
        nginx.render(
            (settings.output / "site").absolute(), settings.nginx_listen, settings.nginx_upstream
        ),
        encoding="utf-8",
    )


def _carry_history(con: duckdb.DuckDBPyConnection, previous: Path) -> None:
    """meta.build_run keeps every published build: copy the previous warehouse's rows."""
    con.execute(report.BUILD_RUN_DDL)
    if not previous.is_file():
        return
    try:
        con.execute(f"ATTACH {db.literal(str(previous))} AS previous (READ_ONLY)")
        con.execute("INSERT INTO meta.build_run BY NAME SELECT * FROM previous.meta.build_run")
    except duckdb.Error:
        pass  # an older or unreadable file: the history starts again
    finally:
        with suppress(duckdb.Error):
            con.execute("DETACH previous")


def _publish(output: Path, work_db: Path, release: Path, keep: int) -> None:
    """Switch `current` to the new release: one rename publishes the warehouse, the site, the
    manifest, the report and the nginx configuration together."""
    os.replace(work_db, release / WAREHOUSE)
    (release / PUBLISHED).touch()
    tmp = output / f".current-{release.name}"
    tmp.unlink(missing_ok=True)
    tmp.symlink_to(Path("releases") / release.name)
    os.replace(tmp, output / "current")  # the commit point
    for name in LINKS:
        stable = output / name
        if not stable.is_symlink():
            # First build in this directory, or a directory from before this layout.
            tmp = output / f".{name}-{release.name}"
            tmp.unlink(missing_ok=True)
            tmp.symlink_to(Path("current") / name)
            if stable.is_dir():
                shutil.rmtree(stable)
            os.replace(tmp, stable)
    published = sorted(r for r in (output / "releases").iterdir() if (r / PUBLISHED).exists())
    for old in published[:-keep]:
        if old != release:
            shutil.rmtree(old, ignore_errors=True)
    _collect_pool(output)


def _pool_folders(release: Path) -> dict[str, str]:
    """store key -> the pool folder its symlink in the release's site points to."""
    stores = release / "site" / export.STORES_DIR
    if not stores.is_dir():  # no store at all
        return {}
    with os.scandir(stores) as entries:
        return {e.name: os.path.basename(os.readlink(e)) for e in entries if e.is_symlink()}


def _collect_pool(output: Path) -> None:
    """Delete the pool folders that no release links to any more (a store's pages of a
    release deleted since, or of a build that did not publish)."""
    pool = output / POOL
    if not pool.is_dir():
        return
    used = {f for r in (output / "releases").iterdir() for f in _pool_folders(r).values()}
    for folder in pool.iterdir():
        if folder.name not in used:
            shutil.rmtree(folder, ignore_errors=True)


@contextmanager
def _exclusive(output: Path) -> Iterator[None]:
    """One build at a time per output directory; leftovers of killed builds are removed."""
    output.mkdir(parents=True, exist_ok=True)
    with (output / ".build.lock").open("w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise BuildError(f"{output}: another build is running") from None
        shutil.rmtree(output / ".work", ignore_errors=True)
        releases = output / "releases"
        if releases.is_dir():
            current = (output / "current").resolve() if (output / "current").exists() else None
            for release in releases.iterdir():
                if not (release / PUBLISHED).exists() and release.resolve() != current:
                    shutil.rmtree(release, ignore_errors=True)  # a build killed before publishing
        for stray in output.glob(".*-2*"):  # temporary links of a killed publish
            if stray.is_symlink():
                stray.unlink(missing_ok=True)
        yield


def build(settings: Settings, reporter: Reporter = SILENT) -> BuildResult:
    with _exclusive(settings.output):
        return _build(settings, reporter)


def _build(settings: Settings, reporter: Reporter) -> BuildResult:
    output = settings.output
    build_id = new_build_id()
    work = output / ".work" / build_id
    release = output / "releases" / build_id
    work.mkdir(parents=True)
    (output / POOL).mkdir(exist_ok=True)
    stages: dict[str, float] = {}
    started_at = datetime.now(UTC)
    work_db = work / WAREHOUSE
    con = db.connect(
        work_db,
        memory_limit=settings.duckdb_memory_limit,
        threads=settings.duckdb_threads,
        temp_directory=work / "tmp",
    )
    try:
        db.create_schemas(con)
        with (
            _timed(stages, "ingest"),
            reporter.stage("ingest", len(TABLES), "tables") as advance,
        ):
            try:
                ingested = ingest.ingest_all(con, settings.input, advance)
            except ingest.InputError as exc:
                raise BuildError(str(exc)) from exc
        with (
            _timed(stages, "transform"),
            reporter.stage("transform", len(STEPS), "steps") as advance,
        ):
            steps = transform.run_steps(con, advance)
        try:
            audit(con, settings)
        except BuildError as exc:
            raise BuildError(f"{exc} (kept for a look: {work_db})") from exc
        total = export.count_store_channels(con, settings.shard_pair)
        with (
            _timed(stages, "export"),
            reporter.stage("export", total, "store x channel answers") as advance,
        ):
            current = output / "current"
            previous = current.resolve() if current.is_symlink() and current.exists() else None
            (release / "site").mkdir(parents=True)  # a shard may have no store at all
            site = export.write_site(
                con,
                release / "site",
                settings.export,
                settings.export_batch_listings,
                previous,
                settings.shard_pair,
                advance,
                (output / POOL, work / POOL),
                settings.duckdb_memory_limit,
            )
            counts = site.counts
            export.write_store_records(release, site.stores)
        # The manifest and the changes (1.7 GB at 10M listings, about 5 s of one core) are
        # written by a thread while DuckDB reports and checkpoints the warehouse.
        with ThreadPoolExecutor(1, thread_name_prefix="release-files") as files:
            written = files.submit(
                _write_release_files, release, site.manifest, site.changed, site.removed, settings
            )
            _carry_history(con, output / WAREHOUSE)
            summary = report.collect(
                con, build_id, settings, ingested, steps, counts, stages, started_at
            )
            summary["shard"] = settings.shard
            summary["fingerprint"] = fingerprint(settings, ingested)
            report.record_run(con, summary)
            report.write(release, summary)
            con.execute("CHECKPOINT")
            written.result()
    finally:
        con.close()
    with _timed(stages, "publish"), reporter.stage("publish"):
        _publish(output, work_db, release, settings.releases_kept)
    shutil.rmtree(work, ignore_errors=True)
    return BuildResult(build_id, release, summary, stages)


def merge(shard_outputs: list[Path], settings: Settings) -> BuildResult:
    """One release from the outputs of `pipeline build --shard I/N` for every I: the union of
    their sites (hard links, no bytes copied), identical to the build without shards."""
    with _exclusive(settings.output):
        return _merge(shard_outputs, settings)


def _merge(shard_outputs: list[Path], settings: Settings) -> BuildResult:
    output = settings.output
    build_id = new_build_id()
    work, release = output / ".work" / build_id, output / "releases" / build_id
    work.mkdir(parents=True)
    started = time.perf_counter()
    current = output / "current"
    previous = current.resolve() if current.is_symlink() and current.exists() else None
    known = export.Manifest.load(previous)
    reports = []
    releases = [(s / "current").resolve() for s in shard_outputs]
    for shard_output, shard_release in zip(shard_outputs, releases, strict=True):
        if not (shard_release / PUBLISHED).exists():
            raise BuildError(f"{shard_output}: no published shard build")
        reports.append(orjson.loads((shard_release / "build_report.json").read_bytes()))
    _check_shards(reports, shard_outputs)
    parts = [
        export.Manifest.load(r).frame.with_columns(site=pl.lit(str(r / "site"))) for r in releases
    ]
    combined = pl.concat(parts)
    try:
        manifest = export.Manifest(combined)
    except ValueError as exc:  # a file in two shards
        raise BuildError(f"{exc} (written by two shards)") from None
    (output / POOL).mkdir(exist_ok=True)
    with export.SiteWriter(release / "site", pool=output / POOL, staging=work / POOL) as writer:
        for shard_release in releases:  # each shard's store folders, under the same names
            for key, folder in _pool_folders(shard_release).items():
                writer.open_store(key, folder)
        for name, site in combined.select("path", "site").iter_rows():
            writer.adopt(site, name)
    changed, removed = manifest.changes(known)
    _write_release_files(release, manifest, changed, removed, settings)
    records = [export.load_store_records(r) for r in releases]
    export.write_store_records(release, {k: v for part in records for k, v in part.items()})
    # Every shard built the whole warehouse from the same input: the first one's serves.
    first = (shard_outputs[0] / "current").resolve() / WAREHOUSE
    try:
        os.link(first, work / WAREHOUSE)
    except OSError:
        shutil.copyfile(first, work / WAREHOUSE)
    summary = dict(reports[0])
    summary["build_id"] = build_id
    summary["merged_from"] = [r["build_id"] for r in reports]
    summary["site"] = {
        key: sum(r["site"].get(key, 0) for r in reports) for key in reports[0]["site"]
    }
    summary["site"].update(export.file_counts(manifest, changed, removed))
    summary["stages_seconds"] = {"merge": round(time.perf_counter() - started, 3)}
    report.write(release, summary)
    _publish(output, work / WAREHOUSE, release, settings.releases_kept)
    shutil.rmtree(work, ignore_errors=True)
    return BuildResult(build_id, release, summary, summary["stages_seconds"])


def fingerprint(settings: Settings, ingested: list[ingest.IngestedTable]) -> str:
    """What a build's pages depend on: every input file's bytes and the export settings. Shards
    merge only when theirs are equal."""
    digest = hashlib.sha256(settings.export.model_dump_json().encode())
    for table in ingested:
        for name in table.files:
            digest.update(name.encode())
            with (settings.input / name).open("rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    digest.update(block)
    return digest.hexdigest()


def _check_shards(reports: list[dict[str, Any]], outputs: list[Path]) -> None:
    shards = [r.get("shard") for r in reports]
    if any(s is None for s in shards):
        raise BuildError(f"{outputs[shards.index(None)]}: not a shard build (--shard I/N)")
    pairs = [tuple(int(x) for x in s.split("/")) for s in shards]  # type: ignore[union-attr]
    count = pairs[0][1]
    if sorted(pairs) != [(i, count) for i in range(count)]:
        raise BuildError(f"shards {', '.join(shards)}: not every shard of {count} exactly once")  # type: ignore[arg-type]
    if len({r.get("fingerprint") for r in reports}) != 1:
        raise BuildError("the shards were built from different inputs or export settings")


def dry_run(settings: Settings) -> dict[str, Any]:
    """Validate the input as a build would (ingest, checks, audit) in memory, and count what a
    build would publish, writing nothing."""
    con = db.connect(memory_limit=settings.duckdb_memory_limit, threads=settings.duckdb_threads)
    try:
        db.create_schemas(con)
        try:
            ingested = ingest.ingest_all(con, settings.input)
        except ingest.InputError as exc:
            raise BuildError(str(exc)) from exc
        transform.run_steps(con)
        audit(con, settings)
        rejected = report.rejected_rows(con)
        pages = export.count_pages(
            con, settings.export, settings.export_batch_listings, settings.shard_pair
        )
        return {
            "input": str(settings.input),
            "tables": {
                i.table.name: {
                    "files": len(i.files),
                    "rows": i.rows,
                    "rejected": rejected.get(i.table.name, 0),
                }
                for i in ingested
            },
            "warnings": db.count_rows(con, "meta.warnings"),
            "stores": db.count_rows(con, "marts.store"),
            "inventory_pages": pages,
            "output": str(settings.output),
        }
    finally:
        con.close()
