"""The market history across nights: each published night's rows of `history.*`, written once to
`OUTPUT/history/build_id=<build_id>/<table>.parquet` and never rewritten, and the warehouse's
views over the published nights' files. (docs/analysts.md, "History across nights"; not the build
history, `meta.build_run`, which `history` carries.)

A night's folder is named as a Hive partition, so that DuckDB reads `build_id` from the path and
opens only the files of the nights a query filters on. Outputs written before kept one folder per
table (`history/<table>/<build_id>.parquet`): those files are read where they are, never moved
(the views of the releases kept name them), and leave as their nights age out."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pyarrow.parquet as pq  # type: ignore[import-untyped]  # no stubs

from pipeline import db
from pipeline.db import SqlFile
from pipeline.paths import NIGHTS, RELEASES, marked_releases, published_release
from pipeline.transform.steps import NIGHT_TABLES, NIGHTS_PUBLISHED

SUFFIX = ".parquet"
PARTITION = "build_id="  # a night's folder: `build_id=<build_id>`
_WRITING = ".writing"  # a night's file being written: `.<table>.parquet.writing`
# Row groups of 32,768 rows: a query for one SKU reads a quarter of DuckDB's default group a
# night, and the footer stays small (docs/benchmarks.md, "History").
_COPY = "COPY (\n{sql}) TO $path (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE 32768)"
_SQL = {table.name: table.sql for table in NIGHT_TABLES}
NIGHTS_COMMENT = (
    "The nights history.* lists, one row each, read from no file: filter a history view by "
    "these build ids to open only those nights' files"
)
BUILD_ID_COMMENT = "The night's build (meta.build_run.build_id); build ids sort by start time"


def night_file(output: Path, table: str, build_id: str) -> Path:
    """Where night `build_id`'s rows of history.`table` are written."""
    return output / NIGHTS / f"{PARTITION}{build_id}" / f"{table}{SUFFIX}"


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


def on_disk(output: Path) -> dict[str, dict[str, Path]]:
    """table -> night -> its file: one listing of the history folder and of each night's folder,
    and of the table folders of the layout before (read in place)."""
    found: dict[str, dict[str, Path]] = {table.name: {} for table in NIGHT_TABLES}
    root = output / NIGHTS
    for table in NIGHT_TABLES:  # the layout before: history/<table>/<build_id>.parquet
        for name in _names(root / table.name):
            if _is_night(name):
                found[table.name][name.removesuffix(SUFFIX)] = root / table.name / name
    for folder in _names(root):
        if folder.startswith(PARTITION):
            night = folder.removeprefix(PARTITION)
            names = set(_names(root / folder))
            for table in NIGHT_TABLES:
                if f"{table.name}{SUFFIX}" in names:
                    found[table.name][night] = night_file(output, table.name, night)
    return found


def _is_night(name: str) -> bool:
    return name.endswith(SUFFIX) and not name.startswith(".")


def _names(folder: Path) -> list[str]:
    try:
        return os.listdir(folder)
    except (FileNotFoundError, NotADirectoryError):
        return []


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
    whole = nights.intersection(*(f.keys() for f in files))
    return sorted(whole)[-keep:]  # build ids sort by their start time


def create_views(con: duckdb.DuckDBPyConnection, output: Path, nights: list[str]) -> None:
    """history.<table> over the files of `nights` (absolute paths, so that the warehouse is
    read alike from any working directory), documented as the marts they copy."""
    found = on_disk(output.resolve())
    for table in NIGHT_TABLES:
        files = [found[table.name][n] for n in nights]
        view = f"history.{table.name}"
        con.execute(f"CREATE OR REPLACE VIEW {view} AS\n{_read_nights(files)}")
        _comment(con, view, table)
    ids = ", ".join(f"({db.literal(n)})" for n in nights) or "(NULL)"
    con.execute(
        f"CREATE OR REPLACE VIEW history.nights AS\n"
        f"SELECT build_id FROM (VALUES {ids}) AS night(build_id) WHERE build_id IS NOT NULL"
    )
    con.execute(f"COMMENT ON VIEW history.nights IS {db.literal(NIGHTS_COMMENT)}")
    con.execute(f"COMMENT ON COLUMN history.nights.build_id IS {db.literal(BUILD_ID_COMMENT)}")


def _read_nights(files: list[Path]) -> str:
    """A SELECT of every row of `files`: one read_parquet per layout and schema, so that DuckDB
    binds a view by one file of each (not every night's) and, with `build_id` in the path, opens
    only the nights a query filters on; then their union by column name (a column a later night
    added reads as NULL in the nights before it). An output whose own path holds a `=` would
    lend DuckDB more partition columns: its nights are read without."""
    groups: dict[tuple[bool, str], list[str]] = {}
    for file in files:
        folder = file.parent
        hive = folder.name.startswith(PARTITION) and "=" not in str(folder.parent)
        schema = pq.read_schema(file).remove_metadata().to_string()
        groups.setdefault((hive, schema), []).append(str(file))
    reads = [
        f"SELECT * FROM read_parquet([{', '.join(map(db.literal, paths))}]"
        + (", hive_partitioning = true)" if hive else ")")
        for (hive, _), paths in groups.items()
    ]
    return "\nUNION ALL BY NAME\n".join(reads)


def _comment(con: duckdb.DuckDBPyConnection, view: str, table: SqlFile) -> None:
    """The view's comment and its columns': those of the mart it copies, where there is one."""
    mart = SqlFile(f"marts/{table.name}")
    columns = mart.column_comments if mart.file.is_file() else {}
    columns = {**table.column_comments, **columns}
    db.comment_table(con, view, table.table_comment, columns, kind="VIEW")


def tidy(output: Path, nights: set[str], followed: str | None, keep_files: int) -> list[str]:
    """After the swap: remove the files of nights that were not published (newer than the
    release this build followed, `followed`: a killed or failed build's), those older than
    the last `keep_files` published nights, files a kill left half written, and the folders
    that leaves empty. What could not be removed, for the log; the next build tries again."""
    releases = output / RELEASES
    pending = {r.name for r in releases.iterdir()} if releases.is_dir() else set()
    found = on_disk(output)
    kept = sorted(nights.intersection(*(f.keys() for f in found.values())))[-keep_files:]
    oldest = kept[0] if kept else None
    stale = [
        path
        for files in found.values()
        for n, path in files.items()
        if (oldest is not None and n < oldest)
        or (n not in nights and n not in pending and (followed is None or n > followed))
    ]
    root = output / NIGHTS
    folders = [root / t.name for t in NIGHT_TABLES] + [
        root / f for f in _names(root) if f.startswith(PARTITION)
    ]
    stale += [f / n for f in folders for n in _names(f) if n.endswith(_WRITING)]
    problems = _remove(stale)
    for folder in folders:
        if folder.is_dir() and not _names(folder):
            with contextlib.suppress(OSError):  # the next build tries again
                folder.rmdir()
    return problems


def _remove(paths: Iterable[Path]) -> list[str]:
    problems = []
    for path in paths:
        try:
            path.unlink(missing_ok=True)
        except OSError as exc:
            problems.append(f"{path}: could not be removed ({exc}); the next build tries again")
    return problems
