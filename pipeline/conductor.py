"""The conductor of every build: one build from its start to its publish, and the release tail
that both ways to build end with (`Conductor.finish`). A build that stops before the swap
leaves the published release as it was (docs/operating.md, "Releases")."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import duckdb

from pipeline import db, export, transform
from pipeline.contract import TABLES, TABLES_BY_NAME
from pipeline.errors import BuildError
from pipeline.export import Site
from pipeline.export.records import blocks, history, nights, report, report_html
from pipeline.export.records.report import DistributedFigures
from pipeline.export.records.state import baseline, previous_volumes, published_stores, seal
from pipeline.ingest import IngestedTable
from pipeline.paths import POOL, RELEASES, WAREHOUSE, WORK
from pipeline.progress import SILENT, Advance, Reporter
from pipeline.publish.release import (
    BuildResult,
    build_time,
    check_release,
    new_build_id,
    publish,
)
from pipeline.settings import SITE_FILES, Settings
from pipeline.transform import StepResult, staged_rows
from pipeline.transform.audit import audit, check_baseline, check_stores_lost, check_volumes

LISTINGS = TABLES_BY_NAME["listings"]


@dataclass
class Conductor:
    """One build in progress: its id and folders, the release it follows, its stages' seconds
    and the warnings it went past."""

    settings: Settings
    reporter: Reporter = SILENT
    build_id: str = field(default_factory=new_build_id)
    # The build id's time (`build_time`): the report, meta.build_run and history.* state it.
    started_at: datetime = field(init=False)
    stages: dict[str, float] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    distributed: DistributedFigures | None = None  # a Ray night's own figures
    # Whether accept_volume_change let a move through: the rolling baseline starts again here.
    volume_change_accepted: bool = False

    def __post_init__(self) -> None:
        self.started_at = build_time(self.build_id) or datetime.now(UTC)
        output = self.settings.output
        self.work = output / WORK / self.build_id
        self.release = output / RELEASES / self.build_id
        self.work.mkdir(parents=True)
        (output / POOL).mkdir(exist_ok=True)
        # The release followed: its history is carried on; its pages, stores and volumes are
        # taken only from a release of this format (`previous`; None otherwise).
        self.baseline, warnings = baseline(output)
        for warning in warnings:
            self.warn(warning)
        self.previous = self.baseline.trusted
        self.volumes, problem = previous_volumes(self.previous)
        self.warn(problem)

    @property
    def warehouse(self) -> Path:
        return self.work / WAREHOUSE

    def warn(self, problem: str | None) -> None:
        """A problem the build goes on past: logged, and kept once in the report's warnings."""
        if problem and problem not in self.warnings:
            self.reporter.warning(problem)
            self.warnings.append(problem)

    def accept(self, moves: Sequence[str]) -> None:
        """Moves past the volume guards that accept_volume_change let through: warnings."""
        for move in moves:
            self.warn(move)
            self.volume_change_accepted = True

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
            memory_limit=settings.build.duckdb_memory_limit,
            threads=settings.build.duckdb_threads,
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
        self.accept(check_volumes(self.volumes, tables, self.settings))

    def guard_site(
        self, con: duckdb.DuckDBPyConnection, site: Site, steps: Sequence[StepResult]
    ) -> None:
        """The guards on what tonight's release would publish: its file count, the stores
        lost, and the listings and files against the median of the last published builds."""
        settings = self.settings
        files = site.counts["files"]
        self.accept(check_volumes(self.volumes, {SITE_FILES: files}, settings))
        published = published_stores(self.previous)  # None: not trusted, and said so
        if published is not None:
            self.accept(check_stores_lost(published, site.stores.keys(), settings))
        listings = staged_rows(steps).get(LISTINGS.name, 0)
        tonight = {f"{LISTINGS.group}/{LISTINGS.name}": listings, SITE_FILES: files}
        baseline = history.baseline(con, settings.build.volume.baseline_builds)
        self.accept(check_baseline(baseline, tonight, settings))

    def finish(
        self,
        con: duckdb.DuckDBPyConnection,
        site: Site,
        ingested: Sequence[IngestedTable],
        steps: Sequence[StepResult],
        inputs_digest: str,
        commit: Callable[[Path], list[str]] | None = None,
    ) -> BuildResult:
        """From a written site to a published release, in order: the history and the site's
        guards; the release's files, report and history row; the night's history files and
        views; the warehouse's comments and indexes; the seal; `commit` (a Ray night's bucket
        commit, which the local swap follows); the swap; the nights' files no warehouse kept
        lists removed. Closes `con`."""
        settings, release = self.settings, self.release
        self.warn(site.previous_problem)
        try:
            self.warn(history.carry_history(con, self.baseline, settings.output))
            self.guard_site(con, site, steps)
            # The manifest and the changes: 1.7 GB at 10M listings, about 5 s of one core.
            with ThreadPoolExecutor(1, thread_name_prefix="release-files") as files:
                written = files.submit(export.write_release_files, release, site, settings)
                checked = files.submit(
                    check_release if site.pages_in is None else _pages_elsewhere,
                    release,
                    site.manifest,
                )
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
                summary.inputs_digest = inputs_digest
                summary.build_warnings = self.warnings
                summary.volume_change_accepted = self.volume_change_accepted
                summary.distributed = self.distributed
                history.record_run(con, summary, self.started_at)
                history.write_history(con, release)
                self.write_night(con)
                summary.write(release)
                report_html.write(release, summary)
                transform.document(con)
                transform.create_indexes(con)
                con.execute("CHECKPOINT")
                written.result()
                checked.result()
            seal(release)
        finally:
            con.close()
        os.replace(self.warehouse, release / WAREHOUSE)
        with self.stage("publish"):
            problems = commit(release) if commit is not None else []
            problems += publish(settings.output, release, settings.build.releases_kept)
            problems += nights.tidy(settings.output)
        for problem in problems:  # after the report: on the log only
            self.reporter.warning(problem)
        shutil.rmtree(self.work, ignore_errors=True)
        return BuildResult(self.build_id, release, summary, self.stages)

    def write_night(self, con: duckdb.DuckDBPyConnection) -> None:
        """Tonight's history files, the nights of a block that closes gathered, history.* over
        the published nights' files (tonight's included: the views bind to existing files, so
        they are written before the seal; a build that stops after this leaves files the next
        build removes or, a block's, keeps), and the release's list of those files."""
        output, build = self.settings.output, self.settings.build
        nights.write_night(con, output, self.build_id, self.started_at)
        published = nights.published(con, output)
        held, problem = blocks.known(output, self.baseline.release, published)
        self.warn(problem)
        listed = blocks.listed(held, published, build.history_nights)
        held = blocks.gather(con, output, held, listed, self.build_id, build.history_block_nights)
        pieces = nights.create_views(con, listed, held)
        nights.write_record(self.release, output, listed, pieces)


def _pages_elsewhere(release: Path, manifest: object) -> None:
    """`check_release` for a release whose pages are in a bucket: the shards checked each
    upload (obstore raises on a failed one), and the commit names only what they wrote."""
