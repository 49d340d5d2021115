"""The build report: `build_report.json` for machines, `build_report.html` for people, and the
build's row in `meta.build_run`."""

from __future__ import annotations

import html
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import orjson

from pipeline import db
from pipeline.ingest import IngestedTable
from pipeline.settings import Settings
from pipeline.transform import StepResult

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
}
BUILD_RUN_DDL = (
    "CREATE TABLE IF NOT EXISTS meta.build_run ("
    + ", ".join(f"{c} {t}" for c, (t, _) in BUILD_RUN_COLUMNS.items())
    + ")"
)


def _grouped(con: duckdb.DuckDBPyConnection, table: str) -> list[dict[str, Any]]:
    rows = con.execute(
        f"SELECT table_name, column_name, reason, count(*) AS n FROM {table} "
        "GROUP BY ALL ORDER BY n DESC, table_name, column_name, reason"
    ).fetchall()
    return [{"table": t, "column": c, "reason": r, "rows": n} for t, c, r, n in rows]


def collect(
    con: duckdb.DuckDBPyConnection,
    build_id: str,
    settings: Settings,
    ingested: Sequence[IngestedTable],
    steps: Sequence[StepResult],
    site: dict[str, int],
    stages: dict[str, float],
    started_at: datetime,
) -> dict[str, Any]:
    staged = {
        s.name.removeprefix("staging."): s.rows for s in steps if s.name.startswith("staging.")
    }
    rejected = dict(
        con.execute(
            "SELECT table_name, count(DISTINCT (source_file, source_row)) "
            "FROM meta.rejects GROUP BY 1"
        ).fetchall()
    )
    tables = {
        i.table.name: {
            "files": list(i.files),
            "rows": i.rows,
            "accepted": staged.get(i.table.name, 0),
            "rejected": rejected.get(i.table.name, 0),
        }
        for i in ingested
    }
    return {
        "build_id": build_id,
        "started_at": started_at.isoformat(timespec="seconds"),
        "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "input": str(settings.input),
        "tables": tables,
        "rejects": _grouped(con, "meta.rejects"),
        "warnings": _grouped(con, "meta.warnings"),
        "stores": db.count_rows(con, "marts.store"),
        "site": site,
        "stages_seconds": stages,
        "steps": [{"name": s.name, "rows": s.rows, "seconds": round(s.seconds, 3)} for s in steps],
    }


def record_run(con: duckdb.DuckDBPyConnection, summary: dict[str, Any]) -> None:
    tables = summary["tables"]
    con.execute(
        "INSERT INTO meta.build_run VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
            summary["site"]["pages"],
            summary["site"]["files"],
            summary["site"]["bytes"],
            round(sum(summary["stages_seconds"].values()), 3),
        ],
    )
    db.comment_table(
        con,
        "meta.build_run",
        "One row per published build, this one and every earlier one",
        {c: doc for c, (_, doc) in BUILD_RUN_COLUMNS.items()},
    )


def _table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in row) + "</tr>" for row in rows
    )
    return f"<table><tr>{head}</tr>{body}</table>"


def render_html(summary: dict[str, Any]) -> str:
    tables = summary["tables"]
    site = summary["site"]
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Build {summary["build_id"]}</title>
<style>body{{font-family:system-ui,sans-serif;max-width:70rem;margin:2rem auto;padding:0 1rem}}
table{{border-collapse:collapse;margin-bottom:1.5rem}}
td,th{{border:1px solid #ccc;padding:.25rem .5rem;text-align:left}}
td:nth-child(n+2){{font-variant-numeric:tabular-nums}}</style></head><body>
<h1>Build {html.escape(summary["build_id"])}</h1>
<p>Input <code>{html.escape(summary["input"])}</code>, started {summary["started_at"]},
finished {summary["finished_at"]}. {summary["stores"]} stores,
{site["pages"]} inventory pages, {site["files"]} files, {site["bytes"]:,} bytes.</p>
<h2>Input tables</h2>
{
        _table(
            ["table", "rows", "accepted", "rejected", "files"],
            [
                [n, t["rows"], t["accepted"], t["rejected"], ", ".join(t["files"])]
                for n, t in tables.items()
            ],
        )
    }
<h2>Rejected rows</h2>
{
        _table(
            ["table", "column", "reason", "rows"], [list(r.values()) for r in summary["rejects"]]
        )
        if summary["rejects"]
        else "<p>None.</p>"
    }
<h2>Warnings</h2>
{
        _table(
            ["table", "column", "reason", "rows"], [list(r.values()) for r in summary["warnings"]]
        )
        if summary["warnings"]
        else "<p>None.</p>"
    }
<h2>Timings</h2>
{_table(["stage", "seconds"], list(summary["stages_seconds"].items()))}
{_table(["step", "rows", "seconds"], [list(s.values()) for s in summary["steps"]])}
</body></html>
"""


def write(release: Path, summary: dict[str, Any]) -> None:
    (release / "build_report.json").write_bytes(orjson.dumps(summary, option=orjson.OPT_INDENT_2))
    (release / "build_report.html").write_text(render_html(summary), encoding="utf-8")
