"""The market history across nights: each published night's rows of `history.*`, written once to
`OUTPUT/history/<table>/<build_id>.parquet` and never rewritten, and the warehouse's views over
the published nights' files. (docs/analysts.md, "History across nights"; not the build history,
`meta.build_run`, which `history` carries.)"""

from __future__ import annotations

import os
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path

import duckdb

from pipeline import db
from pipeline.db import SqlFile
from pipeline.paths import NIGHTS, RELEASES, marked_releases, published_release
from pipeline.transform.steps import NIGHT_TABLES, NIGHTS_PUBLISHED

SUFFIX = ".parquet"
_WRITING = ".writing"  # a night's file being written: `.<build_id>.parquet.writing`
_COPY = "COPY (\n{sql}) TO $path (FORMAT parquet, COMPRESSION zstd)"
_SQL = {table.name: table.sql for table in NIGHT_TABLES}
NIGHTS_COMMENT = (
    "The nights history.* lists, one row each, read from no file: filter a history view by "
    "these build ids to open only those nights' files"
)
BUILD_ID_COMMENT = "The night's build (meta.build_run.build_id); build ids sort by start time"


def night_file(output: Path, table: str, build_id: str) -> Path:
    """Where night `build_id`'s rows of history.`table` are."""
    return output / NIGHTS / table / f"{build_id}{SUFFIX}"


def write_night(
    con: duckdb.DuckDBPyConnection, output: Path, build_id: str, started_at: datetime
) -> None:
    """This night's file of each table, from the warehouse's marts: written under a temporary
    name, then renamed; never rewritten."""
    built_at = started_at.astimezone(UTC).replace(tzinfo=None)
    for table in NIGHT_TABLES:
        target = night_file(output, table.name, build_id)
        if not target.parent.is_dir():
            target.parent.mkdir(parents=True, exist_ok=True)
        writing = target.with_name(f".{target.name}{_WRITING}")
        params = {"build_id": build_id, "built_at": built_at, "path": str(writing)}
        con.execute(_COPY.format(sql=_SQL[table.name]), params)
        os.replace(writing, target)


def on_disk(output: Path) -> dict[str, set[str]]:
    """table -> the nights whose file of it is there (one listing of each table's folder)."""
    found: dict[str, set[str]] = {}
    for table in NIGHT_TABLES:
        try:
            names = os.listdir(output / NIGHTS / table.name)
        except FileNotFoundError:
            names = []
        found[table.name] = {n.removesuffix(SUFFIX) for n in names if _is_night(n)}
    return found


def _is_night(name: str) -> bool:
    return name.endswith(SUFFIX) and not name.startswith(".")


def published(con: duckdb.DuckDBPyConnection, output: Path) -> set[str]:
    """The published nights: the builds of meta.build_run (this one included), and the
    releases that went live (a history taken from an earlier release lacks the later ones)."""
    ids = {build_id for (build_id,) in con.execute(NIGHTS_PUBLISHED.sql).fetchall()}
    live = published_release(output)
    releases = [*marked_releases(output), *([live] if live is not None else [])]
    return ids | {r.name for r in releases}


def listed(output: Path, nights: set[str], keep: int) -> list[str]:
    """The nights history.* lists, oldest first: the last `keep` of `nights` (the published
    ones) with a file of every table."""
    files = on_disk(output).values()
    whole = nights.intersection(*files)
    return sorted(whole)[-keep:]  # build ids sort by their start time


def create_views(con: duckdb.DuckDBPyConnection, output: Path, nights: list[str]) -> None:
    """history.<table> over the files of `nights` (absolute paths, so that the warehouse is
    read alike from any working directory), documented as the marts they copy."""
    root = output.resolve()
    for table in NIGHT_TABLES:
        files = ", ".join(db.literal(str(night_file(root, table.name, n))) for n in nights)
        view = f"history.{table.name}"
        con.execute(
            f"CREATE OR REPLACE VIEW {view} AS\n"
            f"SELECT * FROM read_parquet([{files}], union_by_name = true)"
        )
        _comment(con, view, table)
    ids = ", ".join(f"({db.literal(n)})" for n in nights) or "(NULL)"
    con.execute(
        f"CREATE OR REPLACE VIEW history.nights AS\n"
        f"SELECT build_id FROM (VALUES {ids}) AS night(build_id) WHERE build_id IS NOT NULL"
    )
    con.execute(f"COMMENT ON VIEW history.nights IS {db.literal(NIGHTS_COMMENT)}")
    con.execute(f"COMMENT ON COLUMN history.nights.build_id IS {db.literal(BUILD_ID_COMMENT)}")


def _comment(con: duckdb.DuckDBPyConnection, view: str, table: SqlFile) -> None:
    """The view's comment and its columns': those of the mart it copies, where there is one."""
    mart = SqlFile(f"marts/{table.name}")
    columns = mart.column_comments if mart.file.is_file() else {}
    columns = {**table.column_comments, **columns}
    db.comment_table(con, view, table.table_comment, columns, kind="VIEW")


def tidy(output: Path, nights: set[str], followed: str | None, keep_files: int) -> list[str]:
    """After the swap: remove the files of nights that were not published (newer than the
    release this build followed, `followed`: a killed or failed build's), those older than
    the last `keep_files` published nights, and files a kill left half written. What could
    not be removed, for the log; the next build tries again."""
    releases = output / RELEASES
    pending = {r.name for r in releases.iterdir()} if releases.is_dir() else set()
    found = on_disk(output)
    kept = sorted(nights.intersection(*found.values()))[-keep_files:]
    oldest = kept[0] if kept else None
    problems: list[str] = []
    for table in NIGHT_TABLES:
        folder = output / NIGHTS / table.name
        stale = [
            folder / f"{n}{SUFFIX}"
            for n in found[table.name]
            if (oldest is not None and n < oldest)
            or (n not in nights and n not in pending and (followed is None or n > followed))
        ]
        if folder.is_dir():
            stale += [folder / n for n in os.listdir(folder) if n.endswith(_WRITING)]
        problems += _remove(stale)
    return problems


def _remove(paths: Iterable[Path]) -> list[str]:
    problems = []
    for path in paths:
        try:
            path.unlink(missing_ok=True)
        except OSError as exc:
            problems.append(f"{path}: could not be removed ({exc}); the next build tries again")
    return problems
