"""The build history, `meta.build_run`, carried from release to release in `build_run.parquet`.
(docs/operating.md, "What a release leaves for the next build")"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import duckdb

from pipeline import db
from pipeline.errors import first_line
from pipeline.export.records.report import BuildReport, BuildRun
from pipeline.export.records.state import Baseline, sealed_file_problem
from pipeline.paths import HISTORY, WAREHOUSE, marked_releases
from pipeline.settings import SITE_FILES
from pipeline.transform.steps import (
    BUILD_RUN,
    HISTORY_BASELINE,
    HISTORY_FROM_FILE,
    HISTORY_FROM_WAREHOUSE,
    HISTORY_PUBLISHED,
    HISTORY_RECENT_RUNS,
    HISTORY_THIS_BUILD,
)

# The counts compared with their median over the last builds, and their columns here.
BASELINE_COUNTS = {"stores/listings": "listings", SITE_FILES: "files"}


_RESTART = "meta.build_run starts again with this build"
_INSERT = "INSERT INTO meta.build_run BY NAME\n"


def create_table(con: duckdb.DuckDBPyConnection) -> None:
    """meta.build_run with no row, unless the warehouse has it."""
    con.execute("CREATE TABLE IF NOT EXISTS meta.build_run AS\n" + BUILD_RUN.sql)


def carry_history(con: duckdb.DuckDBPyConnection, previous: Baseline, output: Path) -> str | None:
    """Create meta.build_run with the history of the release this build follows.

    Returns a warning when the history came from elsewhere than that release's
    `build_run.parquet`. (docs/operating.md, "What a release leaves for the next build")"""
    create_table(con)
    release = previous.release
    if release is None:
        return None
    problems: list[str] = []
    problem = sealed_file_problem(release, HISTORY) or _read(con, release / HISTORY)
    if problem is None:
        return None
    if previous.trusted is not None:  # a file this format always has: say why it was not read
        problems.append(problem)
    problem = _read(con, release / WAREHOUSE)
    if problem is None:
        return _used(problems, f"{release / WAREHOUSE}")
    problems.append(problem)
    for other in marked_releases(output):
        if other.resolve() == release.resolve():
            continue
        if sealed_file_problem(other, HISTORY) is None and _read(con, other / HISTORY) is None:
            return _used(problems, f"{other / HISTORY}, which lacks the builds published after it")
    return "; ".join([*problems, _RESTART])


def _used(problems: list[str], source: str) -> str | None:
    """The warning for a history taken from `source`, after `problems`; none when nothing
    was said (a release of another format, whose warning is its format)."""
    if not problems:
        return None
    return "; ".join([*problems, f"meta.build_run carried on from {source}"])


def _read(con: duckdb.DuckDBPyConnection, source: Path) -> str | None:
    """meta.build_run from `source` (a `build_run.parquet`, or a warehouse's meta.build_run);
    why it could not be read, if it could not (meta.build_run is left empty then)."""
    try:
        if source.suffix == ".parquet":
            con.execute(_INSERT + HISTORY_FROM_FILE.sql, {"path": str(source)})
        else:
            con.execute("ATTACH $path AS previous (READ_ONLY)", {"path": str(source)})
            try:
                con.execute(_INSERT + HISTORY_FROM_WAREHOUSE.sql)
            finally:
                con.execute("DETACH previous")
    except duckdb.Error as exc:
        con.execute("DELETE FROM meta.build_run")
        return f"{source}: the build history could not be read ({first_line(exc)})"
    return None


# The builds the report's history charts show, the last first.
REPORTED_RUNS = 30


def record_run(con: duckdb.DuckDBPyConnection, summary: BuildReport, started_at: datetime) -> None:
    """This build's row in meta.build_run, started at `started_at` (the build id's time, to the
    microsecond, which the summary states to the second); the summary gains the last
    `REPORTED_RUNS` rows (`history`, oldest first), which the report charts."""
    tables, site = summary.tables, summary.site
    row = {
        "build_id": summary.build_id,
        "started_at": started_at.astimezone(UTC).replace(tzinfo=None),
        "finished_at": datetime.fromisoformat(summary.finished_at).replace(tzinfo=None),
        "input_dir": summary.input,
        "raw_rows": sum(t.rows for t in tables.values()),
        "rejected_rows": sum(t.rejected for t in tables.values()),
        "warnings": sum(w.rows for w in summary.warnings),
        "stores": summary.stores,
        "listings": tables["listings"].accepted,
        "pages": site.pages,
        "files": site.files,
        "site_bytes": site.bytes,
        "seconds": round(sum(summary.stages_seconds.values()), 3),
        "files_changed": site.files - site.files_unchanged,
        "volume_change_accepted": summary.volume_change_accepted,
    }
    con.execute(_INSERT + HISTORY_THIS_BUILD.sql, row)
    summary.history = recent_runs(con)
    db.comment_table(con, BUILD_RUN.table, BUILD_RUN.table_comment, BUILD_RUN.column_comments)


def recent_runs(con: duckdb.DuckDBPyConnection, limit: int = REPORTED_RUNS) -> list[BuildRun]:
    """The last `limit` builds of meta.build_run, oldest first: what the report's history
    charts show (a count an older build did not record is None)."""
    result = con.execute(HISTORY_RECENT_RUNS.sql, {"limit": limit})
    names = [column[0] for column in result.description]
    rows = result.fetchall()
    return [BuildRun.model_validate(dict(zip(names, row, strict=True))) for row in reversed(rows)]


def baseline(con: duckdb.DuckDBPyConnection, builds: int) -> dict[str, list[int]]:
    """The counts of `BASELINE_COUNTS` over the last `builds` builds of meta.build_run (as
    carried: the published ones), newest first, going back no further than the last one that
    accept_volume_change let through: the operator said its volumes are real."""
    result = con.execute(HISTORY_BASELINE.sql, {"builds": builds})
    names = [column[0] for column in result.description]
    window = []
    for row in result.fetchall():
        window.append(dict(zip(names, row, strict=True)))
        if window[-1]["volume_change_accepted"]:
            break
    return {
        name: [row[column] for row in window if row[column] is not None]
        for name, column in BASELINE_COUNTS.items()
    }


def write_history(con: duckdb.DuckDBPyConnection, release: Path) -> None:
    """The history as published with `release`, for the next build."""
    con.execute(
        "COPY (\n" + HISTORY_PUBLISHED.sql + ") TO $path (FORMAT parquet)",
        {"path": str(release / HISTORY)},
    )
