"""The build history, `meta.build_run`: one row per published build, carried from release to
release. Each release keeps its rows as `build_run.parquet` beside the manifest, which the next
build reads: no reader of the published warehouse (an analyst holding it open, even read-write)
can keep the history from being carried on. When that file cannot be trusted, the same
release's warehouse, then an earlier release's file, still hold the history: it starts again
only when none of them can be read. A release of an earlier state format (`state.Baseline`)
lends its history all the same: from its file where its seal vouches for it, else from its
warehouse, whose `meta.build_run` every layout has kept; the columns it lacks are null."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import duckdb

from pipeline import db
from pipeline.errors import first_line
from pipeline.export.records.report import BuildReport, BuildRun
from pipeline.export.records.state import Baseline, damage
from pipeline.paths import HISTORY, WAREHOUSE, marked_releases
from pipeline.settings import SITE_FILES

BUILD_RUN_COLUMNS = {
    "build_id": ("VARCHAR", "Build identifier: UTC start time and a random suffix"),
    "started_at": ("TIMESTAMP", "When the build started (UTC)"),
    "finished_at": ("TIMESTAMP", "When the build finished its work, before publishing (UTC)"),
    "input_dir": ("VARCHAR", "Input directory"),
    "raw_rows": ("BIGINT", "Rows loaded from all input files"),
    "rejected_rows": ("BIGINT", "Rows left out (see meta.rejects of that build)"),
    "warnings": ("BIGINT", "Warnings (see meta.warnings of that build)"),
    "stores": ("BIGINT", "Known stores"),
    "listings": ("BIGINT", "Accepted listings"),
    "pages": ("BIGINT", "Inventory pages published"),
    "files": ("BIGINT", "Files in the site"),
    "site_bytes": ("BIGINT", "Bytes in the site"),
    "seconds": ("DOUBLE", "Wall time of ingest, transform and export"),
    "files_changed": ("BIGINT", "Files written anew: changed or new since the previous build"),
    "volume_change_accepted": (
        "BOOLEAN",
        "Whether --accept-volume-change let a move past the volume guards through (see the "
        "report's build_warnings): the rolling baseline (volume.baseline_builds) starts here",
    ),
}
# The counts compared with their median over the last builds, and their columns here.
BASELINE_COUNTS = {"stores/listings": "listings", SITE_FILES: "files"}
BUILD_RUN_DDL = (
    "CREATE TABLE IF NOT EXISTS meta.build_run ("
    + ", ".join(f"{c} {t}" for c, (t, _) in BUILD_RUN_COLUMNS.items())
    + ")"
)


_RESTART = "meta.build_run starts again with this build"


def carry_history(con: duckdb.DuckDBPyConnection, previous: Baseline, output: Path) -> str | None:
    """Create meta.build_run with the rows of the release this build follows (`previous`, see
    `state.baseline`): from its `build_run.parquet` (as sealed); when that cannot be trusted or
    read, from the same release's warehouse (its meta.build_run); then from the other releases'
    `build_run.parquet`, the last published first (an earlier release's rows lack the builds
    published after it). Returns why the history was not taken from `build_run.parquet` and
    what it was taken from instead (or that it starts again with this build), if it was not;
    of a release of another format, only when its warehouse cannot be read either (its format
    is the warning)."""
    con.execute(BUILD_RUN_DDL)
    release = previous.release
    if release is None:
        return None
    problems: list[str] = []
    problem = damage(release, HISTORY) or _read(con, release / HISTORY)
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
        if damage(other, HISTORY) is None and _read(con, other / HISTORY) is None:
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
            con.execute(
                "INSERT INTO meta.build_run BY NAME SELECT * FROM read_parquet($path)",
                {"path": str(source)},
            )
        else:
            con.execute("ATTACH $path AS previous (READ_ONLY)", {"path": str(source)})
            try:
                con.execute(
                    "INSERT INTO meta.build_run BY NAME SELECT * FROM previous.meta.build_run"
                )
            finally:
                con.execute("DETACH previous")
    except duckdb.Error as exc:
        con.execute("DELETE FROM meta.build_run")
        return f"{source}: the build history could not be read ({first_line(exc)})"
    return None


# The builds the report's history charts show, the last first.
REPORTED_RUNS = 30


def record_run(con: duckdb.DuckDBPyConnection, summary: BuildReport) -> None:
    """This build's row in meta.build_run; the summary gains the last `REPORTED_RUNS` rows
    (`history`, oldest first), which the report charts."""
    tables, site = summary.tables, summary.site
    con.execute(
        f"INSERT INTO meta.build_run ({', '.join(BUILD_RUN_COLUMNS)}) "
        f"VALUES ({', '.join('?' * len(BUILD_RUN_COLUMNS))})",
        [
            summary.build_id,
            datetime.fromisoformat(summary.started_at).replace(tzinfo=None),
            datetime.fromisoformat(summary.finished_at).replace(tzinfo=None),
            summary.input,
            sum(t.rows for t in tables.values()),
            sum(t.rejected for t in tables.values()),
            sum(w.rows for w in summary.warnings),
            summary.stores,
            tables["listings"].accepted,
            site.pages,
            site.files,
            site.bytes,
            round(sum(summary.stages_seconds.values()), 3),
            site.files - site.files_unchanged,
            summary.volume_change_accepted,
        ],
    )
    summary.history = recent_runs(con)
    db.comment_table(
        con,
        "meta.build_run",
        "One row per published build, this one and every earlier one",
        {c: doc for c, (_, doc) in BUILD_RUN_COLUMNS.items()},
    )


def recent_runs(con: duckdb.DuckDBPyConnection, limit: int = REPORTED_RUNS) -> list[BuildRun]:
    """The last `limit` builds of meta.build_run, oldest first: what the report's history
    charts show (a count an older build did not record is None)."""
    rows = con.execute(
        "SELECT build_id, strftime(started_at, '%Y-%m-%d %H:%M'), listings, files_changed, "
        "rejected_rows, seconds FROM meta.build_run "
        "ORDER BY started_at DESC, build_id DESC LIMIT $limit",
        {"limit": limit},
    ).fetchall()
    names = ("build_id", "started_at", "listings", "files_changed", "rejected_rows", "seconds")
    return [BuildRun.model_validate(dict(zip(names, row, strict=True))) for row in reversed(rows)]


def baseline(con: duckdb.DuckDBPyConnection, builds: int) -> dict[str, list[int]]:
    """The counts of `BASELINE_COUNTS` over the last `builds` builds of meta.build_run (as
    carried: the published ones), newest first, going back no further than the last one that
    accept_volume_change let through: the operator said its volumes are real."""
    columns = ", ".join(BASELINE_COUNTS.values())
    rows = con.execute(
        f"SELECT {columns}, volume_change_accepted FROM meta.build_run "
        "ORDER BY started_at DESC, build_id DESC LIMIT $builds",
        {"builds": builds},
    ).fetchall()
    window = []
    for *counts, accepted in rows:
        window.append(counts)
        if accepted:
            break
    return {
        name: [row[i] for row in window if row[i] is not None]
        for i, name in enumerate(BASELINE_COUNTS)
    }


def write_history(con: duckdb.DuckDBPyConnection, release: Path) -> None:
    """The history as published with `release`, for the next build."""
    con.execute(
        "COPY (SELECT * FROM meta.build_run ORDER BY started_at, build_id) TO $path "
        "(FORMAT parquet)",
        {"path": str(release / HISTORY)},
    )
