"""The nightly build, stage by stage: ingest -> transform -> audit -> export -> publish.

The warehouse is built in `OUTPUT/.work/<build_id>/`, the release's files in
`OUTPUT/releases/<build_id>/`; `pipeline.publish.release` makes the release live in one rename.
A build that fails or is killed leaves the published release as it was.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

from pipeline import db, export, ingest, transform
from pipeline.contract import TABLES
from pipeline.errors import BuildError
from pipeline.export import history, report
from pipeline.export.digests import inputs_digest
from pipeline.export.inventory import count_pages, count_store_channels
from pipeline.export.state import previous_volumes, seal
from pipeline.paths import POOL, RELEASES, SITE, WAREHOUSE, WORK, published_release
from pipeline.progress import SILENT, Reporter
from pipeline.publish.release import (
    BuildResult,
    check_release,
    exclusive,
    new_build_id,
    publish,
)
from pipeline.settings import SITE_FILES, Settings
from pipeline.transform import staged_rows
from pipeline.transform.audit import audit, check_volumes, rejected_rows
from pipeline.transform.steps import STEPS


@contextmanager
def _timed(stages: dict[str, float], name: str) -> Iterator[None]:
    started = time.perf_counter()
    yield
    stages[name] = round(time.perf_counter() - started, 3)


def build(settings: Settings, reporter: Reporter = SILENT) -> BuildResult:
    with exclusive(settings.output):
        return _build(settings, reporter)


def _build(settings: Settings, reporter: Reporter) -> BuildResult:
    output = settings.output
    build_id = new_build_id()
    work = output / WORK / build_id
    release = output / RELEASES / build_id
    work.mkdir(parents=True)
    (output / POOL).mkdir(exist_ok=True)
    previous = published_release(output)
    stages: dict[str, float] = {}
    started_at = datetime.now(UTC)
    warnings: list[str] = []  # problems the build went past, for the log and the report

    def warn(problem: str | None) -> None:
        if problem:
            reporter.warning(problem)
            warnings.append(problem)

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
            ingested = ingest.ingest_all(con, settings.input, advance, settings.max_columns)
        with (
            _timed(stages, "transform"),
            reporter.stage("transform", len(STEPS), "steps") as advance,
        ):
            steps = transform.run_steps(con, advance)
        try:
            audit(con, settings)
        except BuildError as exc:
            raise BuildError(f"{exc} (kept for a look: {work_db})") from exc
        published, problem = previous_volumes(previous)
        warn(problem)
        staged = staged_rows(steps)
        check_volumes(
            published, {f"{t.group}/{t.name}": staged.get(t.name, 0) for t in TABLES}, settings
        )
        total = count_store_channels(con, settings.shard)
        with (
            _timed(stages, "export"),
            reporter.stage("export", total, "store x channel answers") as advance,
        ):
            (release / SITE).mkdir(parents=True)  # a shard may have no store at all
            site = export.write_site(
                con,
                settings,
                release / SITE,
                previous_release=previous,
                pool=(output / POOL, work / POOL),
                advance=advance,
            )
        warn(site.previous_problem)
        check_volumes(published, {SITE_FILES: site.counts["files"]}, settings)
        # The manifest and the changes (1.7 GB at 10M listings, about 5 s of one core) are
        # written, and the site checked against the manifest, by a thread while DuckDB reports
        # and checkpoints the warehouse.
        with ThreadPoolExecutor(1, thread_name_prefix="release-files") as files:
            written = files.submit(export.write_release_files, release, site, settings)
            checked = files.submit(check_release, release, site.manifest)
            warn(history.carry_history(con, output))
            summary = report.collect(
                con, build_id, settings, ingested, steps, site.counts, stages, started_at
            )
            summary["shard"] = None if settings.shard is None else str(settings.shard)
            summary["inputs_digest"] = inputs_digest(con, settings.export)
            summary["build_warnings"] = warnings
            history.record_run(con, summary)
            history.write_history(con, release)
            report.write(release, summary)
            con.execute("CHECKPOINT")
            written.result()
            checked.result()
        seal(release)
    finally:
        con.close()
    with _timed(stages, "publish"), reporter.stage("publish"):
        publish(output, work_db, release, settings.releases_kept)
    shutil.rmtree(work, ignore_errors=True)
    return BuildResult(build_id, release, summary, stages)


def dry_run(settings: Settings) -> dict[str, Any]:
    """Validate the input as a build would (ingest, checks, audit) in memory, and count what a
    build would publish, writing nothing."""
    con = db.connect(memory_limit=settings.duckdb_memory_limit, threads=settings.duckdb_threads)
    try:
        db.create_schemas(con)
        ingested = ingest.ingest_all(con, settings.input, max_columns=settings.max_columns)
        transform.run_steps(con)
        audit(con, settings)
        rejected = rejected_rows(con)
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
            "inventory_pages": count_pages(con, settings),
            "output": str(settings.output),
        }
    finally:
        con.close()
