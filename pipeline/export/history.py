"""The build history, `meta.build_run`: one row per published build, carried from release to
release. Each release keeps its rows as `build_run.parquet` beside the manifest, which the next
build reads: no reader of the published warehouse (an analyst holding it open, even read-write)
can keep the history from being carried on."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb

from pipeline import db
from pipeline.errors import first_line
from pipeline.export.state import damage
from pipeline.paths import HISTORY, WAREHOUSE, published_release

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
}
BUILD_RUN_DDL = (
    "CREATE TABLE IF NOT EXISTS meta.build_run ("
    + ", ".join(f"{c} {t}" for c, (t, _) in BUILD_RUN_COLUMNS.items())
    + ")"
)


def carry_history(con: duckdb.DuckDBPyConnection, output: Path) -> str | None:
    """Create meta.build_run with the published build's rows: from its release's
    `build_run.parquet`, or from its warehouse (a release from before that file was kept, or an
    output directory from before releases). Returns why the history could not be read, if it
    could not (the history then starts again with this build)."""
    con.execute(BUILD_RUN_DDL)
    release = published_release(output)
    sources = [release / HISTORY, release / WAREHOUSE] if release else [output / WAREHOUSE]
    source = next((s for s in sources if s.is_file()), None)
    if source is None:
        return None
    restart = "meta.build_run starts again with this build"
    problem = damage(release, HISTORY) if release and source.name == HISTORY else None
    if problem:
        return f"{problem}; {restart}"
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
        return f"{source}: the build history could not be read ({first_line(exc)}); " + restart
    return None


# The builds the report's history charts show, the last first.
REPORTED_RUNS = 30


def record_run(con: duckdb.DuckDBPyConnection, summary: dict[str, Any]) -> None:
    """This build's row in meta.build_run; the summary gains the last `REPORTED_RUNS` rows
    (`history`, oldest first), which the report charts."""
    tables, site = summary["tables"], summary["site"]
    con.execute(
        f"INSERT INTO meta.build_run ({', '.join(BUILD_RUN_COLUMNS)}) "
        f"VALUES ({', '.join('?' * len(BUILD_RUN_COLUMNS))})",
        [
            summary["build_id"],
            datetime.fromisoformat(summary["started_at"]).replace(tzinfo=None),
            datetime.fromisoformat(summary["finished_at"]).replace(tzinfo=None),
            summary["input"],
            sum(t["rows"] for t in tables.values()),
            sum(t["rejected"] for t in tables.values()),
            sum(w["rows"] for w in summary["warnings"]),
            summary["stores"],
            tables["listings"]["accepted"],
            site["pages"],
            site["files"],
            site["bytes"],
            round(sum(summary["stages_seconds"].values()), 3),
            site["files"] - site.get("files_unchanged", 0),
        ],
    )
    summary["history"] = recent_runs(con)
    db.comment_table(
        con,
        "meta.build_run",
        "One row per published build, this one and every earlier one",
        {c: doc for c, (_, doc) in BUILD_RUN_COLUMNS.items()},
    )


def recent_runs(con: duckdb.DuckDBPyConnection, limit: int = REPORTED_RUNS) -> list[dict[str, Any]]:
    """The last `limit` builds of meta.build_run, oldest first: what the report's history
    charts show (a count an older build did not record is None)."""
    rows = con.execute(
        "SELECT build_id, strftime(started_at, '%Y-%m-%d %H:%M'), listings, files_changed, "
        "rejected_rows, seconds FROM meta.build_run "
        "ORDER BY started_at DESC, build_id DESC LIMIT $limit",
        {"limit": limit},
    ).fetchall()
    names = ("build_id", "started_at", "listings", "files_changed", "rejected_rows", "seconds")
    return [dict(zip(names, row, strict=True)) for row in reversed(rows)]


def write_history(con: duckdb.DuckDBPyConnection, release: Path) -> None:
    """The history as published with `release`, for the next build."""
    con.execute(
        "COPY (SELECT * FROM meta.build_run ORDER BY started_at, build_id) TO $path "
        "(FORMAT parquet)",
        {"path": str(release / HISTORY)},
    )
