"""The nightly build, stage by stage: ingest -> transform -> audit -> export -> publish.

The warehouse is built in `OUTPUT/.work/<build_id>/`, the release's files in
`OUTPUT/releases/<build_id>/`; `pipeline.publish.release` makes the release live in one rename.
A build that fails or is killed leaves the published release as it was.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb

from pipeline import db, export, ingest, transform
from pipeline.contract import TABLES
from pipeline.errors import BuildError
from pipeline.export import Site, history, report
from pipeline.export.digests import TableSums, inputs_digest, table_sums
from pipeline.export.inventory import count_pages, count_store_channels
from pipeline.export.state import baseline, previous_volumes, seal
from pipeline.ingest import IngestedTable
from pipeline.paths import POOL, RELEASES, SITE, WAREHOUSE, WORK
from pipeline.progress import SILENT, Advance, Reporter
from pipeline.publish.release import (
    BuildResult,
    check_release,
    exclusive,
    new_build_id,
    publish,
)
from pipeline.settings import SITE_FILES, Settings
from pipeline.transform import StepResult, staged_rows
from pipeline.transform.audit import audit, check_volumes, rejected_rows
from pipeline.transform.steps import STEPS


@dataclass
class Night:
    """One build in progress, from its start to its publish: its id and folders, the published
    release it follows (`state.baseline`), its stages' seconds and the warnings it went past.
    The one-machine build and the distributed one (`pipeline.distributed`) run their stages
    through it and end with the same `finish`."""

    settings: Settings
    reporter: Reporter = SILENT
    build_id: str = field(default_factory=new_build_id)
    started_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    stages: dict[str, float] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    report_extra: dict[str, Any] = field(default_factory=dict)  # a kind of build's own figures

    def __post_init__(self) -> None:
        output = self.settings.output
        self.work = output / WORK / self.build_id
        self.release = output / RELEASES / self.build_id
        self.work.mkdir(parents=True)
        (output / POOL).mkdir(exist_ok=True)
        self.previous, problem = baseline(output)
        self.warn(problem)
        self.volumes, problem = previous_volumes(self.previous)
        self.warn(problem)

    @property
    def warehouse(self) -> Path:
        return self.work / WAREHOUSE

    def warn(self, problem: str | None) -> None:
        """A problem the build goes on past: on the log, and in the report's build_warnings."""
        if problem:
            self.reporter.warning(problem)
            self.warnings.append(problem)

    @contextmanager
    def stage(self, name: str, total: int | None = None, unit: str = "items") -> Iterator[Advance]:
        """A stage: timed for the report, shown by the reporter."""
        started = time.perf_counter()
        with self.reporter.stage(name, total, unit) as advance:
            yield advance
        self.stages[name] = round(time.perf_counter() - started, 3)

    def connect(self) -> duckdb.DuckDBPyConnection:
        """The warehouse being built."""
        settings = self.settings
        return db.connect(
            self.warehouse,
            memory_limit=settings.duckdb_memory_limit,
            threads=settings.duckdb_threads,
            temp_directory=self.work / "tmp",
        )

    def audit(
        self,
        con: duckdb.DuckDBPyConnection,
        ingested: Sequence[IngestedTable],
        steps: Sequence[StepResult],
    ) -> None:
        """The reject threshold, then the tables' volume guards."""
        try:
            audit(con, self.settings, ingested)
        except BuildError as exc:
            raise BuildError(f"{exc} (kept for a look: {self.warehouse})") from exc
        staged = staged_rows(steps)
        tables = {f"{t.group}/{t.name}": staged.get(t.name, 0) for t in TABLES}
        for move in check_volumes(self.volumes, tables, self.settings):
            self.warn(move)

    def finish(
        self,
        con: duckdb.DuckDBPyConnection,
        site: Site,
        ingested: Sequence[IngestedTable],
        steps: Sequence[StepResult],
        sums: Mapping[str, TableSums],
    ) -> BuildResult:
        """From a written site to a published release: the site's volume guard; the manifest,
        changes and stores' records, and the site checked against the manifest, by a thread
        while DuckDB reports, records the history and checkpoints the warehouse; the seal; the
        swap. Closes `con`."""
        settings, release = self.settings, self.release
        self.warn(site.previous_problem)
        try:
            for move in check_volumes(self.volumes, {SITE_FILES: site.counts["files"]}, settings):
                self.warn(move)
            # The manifest and the changes: 1.7 GB at 10M listings, about 5 s of one core.
            with ThreadPoolExecutor(1, thread_name_prefix="release-files") as files:
                written = files.submit(export.write_release_files, release, site, settings)
                checked = files.submit(check_release, release, site.manifest)
                self.warn(history.carry_history(con, self.previous, settings.output))
                summary = report.collect(
                    con,
                    self.build_id,
                    settings,
                    ingested,
                    steps,
                    site.counts,
                    self.stages,
                    self.started_at,
                )
                summary["shard"] = None if settings.shard is None else str(settings.shard)
                summary["inputs_digest"] = inputs_digest(sums, settings.export)
                summary["build_warnings"] = self.warnings
                summary.update(self.report_extra)
                history.record_run(con, summary)
                history.write_history(con, release)
                report.write(release, summary)
                con.execute("CHECKPOINT")
                written.result()
                checked.result()
            seal(release)
        finally:
            con.close()
        with self.stage("publish"):
            problems = publish(settings.output, self.warehouse, release, settings.releases_kept)
        for problem in problems:  # after the report: on the log only
            self.reporter.warning(problem)
        shutil.rmtree(self.work, ignore_errors=True)
        return BuildResult(self.build_id, release, summary, self.stages)


def build(settings: Settings, reporter: Reporter = SILENT) -> BuildResult:
    with exclusive(settings.output):
        return _build(Night(settings, reporter))


def _build(night: Night) -> BuildResult:
    settings = night.settings
    con = night.connect()
    try:
        db.create_schemas(con)
        with night.stage("ingest", len(TABLES), "tables") as advance:
            ingested = ingest.ingest_all(con, settings.input, advance, settings.max_columns)
        with night.stage("transform", len(STEPS), "steps") as advance:
            steps = transform.run_steps(con, advance)
        night.audit(con, ingested, steps)
        total = count_store_channels(con, settings.shard)
        with night.stage("export", total, "store x channel answers") as advance:
            (night.release / SITE).mkdir(parents=True)  # a shard may have no store at all
            site = export.write_site(
                con,
                settings,
                night.release / SITE,
                previous_release=night.previous,
                pool=(settings.output / POOL, night.work / POOL),
                advance=advance,
            )
        sums = {t.name: table_sums(con, f"raw.{t.name}") for t in TABLES}
    except BaseException:
        con.close()
        raise
    return night.finish(con, site, ingested, steps, sums)


def dry_run(settings: Settings) -> dict[str, Any]:
    """Validate the input as a build would (ingest, checks, audit) in memory, and count what a
    build would publish, writing nothing."""
    con = db.connect(memory_limit=settings.duckdb_memory_limit, threads=settings.duckdb_threads)
    try:
        db.create_schemas(con)
        ingested = ingest.ingest_all(con, settings.input, max_columns=settings.max_columns)
        transform.run_steps(con)
        audit(con, settings, ingested)
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
