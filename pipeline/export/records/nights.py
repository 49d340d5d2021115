"""The market history across nights: each published night's rows of `history.*`, written once to
`OUTPUT/history/build_id=<build_id>/<table>.parquet` and never rewritten, gathered once into a
block of nights (`blocks`), and the warehouse's views over the files holding the listed nights.
Each release lists the files its views read (NIGHTS_LIST): the next build starts from that
list, and a file goes only when no kept release lists it. (docs/analysts.md, "History across
nights"; not the build history, `meta.build_run`, which `history` carries.)

A night's folder is named as a Hive partition, so that DuckDB reads `build_id` from the path and
opens only the files of the nights a query filters on. Outputs written before kept one folder per
table (`history/<table>/<build_id>.parquet`): those files are read where they are, never moved
(the views of the releases kept name them), and leave as their nights age out."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import orjson
import pyarrow.parquet as pq  # type: ignore[import-untyped]  # no stubs

from pipeline import db
from pipeline.db import SqlFile
from pipeline.paths import (
    DISCARDED,
    NIGHTS,
    NIGHTS_LIST,
    RELEASES,
    marked_releases,
    published_release,
)
from pipeline.transform.steps import NIGHT_TABLES, NIGHTS_PUBLISHED

SUFFIX = ".parquet"
PARTITION = "build_id="  # a night's folder: `build_id=<build_id>`
BLOCK = "block-"  # a block's folder: `block-<first build_id>_<last build_id>`
BLOCK_SEPARATOR = "_"  # never in a build id
BLOCK_NIGHTS = "nights.txt"  # in a block's folder: its nights, one a line, written first
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


@dataclass(frozen=True)
class Piece:
    """One file of a history table and the nights it holds: a night's own file, or a block."""

    path: Path  # absolute
    nights: tuple[str, ...]
    schema: str = ""  # its Parquet schema as pyarrow writes it; "": not known yet

    @property
    def hive(self) -> bool:
        """A night's folder named as a Hive partition (`build_id=`), read with the partition:
        an output whose own path holds a `=` would lend DuckDB more partition columns."""
        folder = self.path.parent
        return folder.name.startswith(PARTITION) and "=" not in str(folder.parent)

    def known(self) -> Piece:
        """This piece with its schema, read from its file's footer if it was not known."""
        if self.schema:
            return self
        schema = pq.read_schema(self.path).remove_metadata().to_string()
        return Piece(self.path, self.nights, schema)


Pieces = dict[str, list[Piece]]  # table -> the pieces its view reads, oldest first


def write_record(release: Path, output: Path, listed: list[str], pieces: Pieces) -> None:
    """The release's NIGHTS_LIST: the nights its views list and each file they read (its path
    under the output, its nights and schema), for the next build and for `tidy`."""
    root = output.resolve()
    record = {
        "nights": listed,
        "files": {
            table: [
                {
                    "path": str(p.path.relative_to(root)),
                    "nights": list(p.nights),
                    "schema": p.schema,
                }
                for p in of_table
            ]
            for table, of_table in pieces.items()
        },
    }
    writing = release / f".{NIGHTS_LIST}{_WRITING}"
    writing.write_bytes(orjson.dumps(record, option=orjson.OPT_INDENT_2))
    os.replace(writing, release / NIGHTS_LIST)


def read_record(release: Path, output: Path) -> Pieces | None:
    """The files `release`'s views read, as its NIGHTS_LIST says; None when it has none (a
    release from before it was written) or it cannot be read."""
    try:
        files = orjson.loads((release / NIGHTS_LIST).read_bytes())["files"]
        root = output.resolve()
        return {
            t.name: [
                Piece(root / f["path"], tuple(f["nights"]), f["schema"]) for f in files[t.name]
            ]
            for t in NIGHT_TABLES
        }
    except (OSError, orjson.JSONDecodeError, KeyError, TypeError):
        return None


def create_views(
    con: duckdb.DuckDBPyConnection, listed: list[str], pieces: dict[str, dict[str, Piece]]
) -> Pieces:
    """history.<table> over the files holding `listed` (`pieces`: table -> night -> its file;
    absolute paths, so that the warehouse is read alike from any working directory),
    documented as the marts they copy. Reads no night's file: a schema not known is read from
    its file (tonight's). Returns the files each view reads, with their schemas."""
    wanted = set(listed)
    used: Pieces = {}
    for table in NIGHT_TABLES:
        of_table = pieces[table.name]
        distinct = {of_table[n].path: of_table[n] for n in listed}
        used[table.name] = [p.known() for p in distinct.values()]
        view = f"history.{table.name}"
        select = _read_pieces(used[table.name], wanted)
        con.execute(f"CREATE OR REPLACE VIEW {view} AS\n{select}")
        _comment(con, view, table)
    ids = ", ".join(f"({db.literal(n)})" for n in listed) or "(NULL)"
    con.execute(
        f"CREATE OR REPLACE VIEW history.nights AS\n"
        f"SELECT build_id FROM (VALUES {ids}) AS night(build_id) WHERE build_id IS NOT NULL"
    )
    con.execute(f"COMMENT ON VIEW history.nights IS {db.literal(NIGHTS_COMMENT)}")
    con.execute(f"COMMENT ON COLUMN history.nights.build_id IS {db.literal(BUILD_ID_COMMENT)}")
    return used


def _read_pieces(pieces: list[Piece], wanted: set[str]) -> str:
    """A SELECT of the rows of `wanted` nights in `pieces`: one read_parquet per layout and
    schema, so that DuckDB binds a view by one file of each (not every night's) and opens only
    the nights a query filters on (by the `build_id` of a night's folder, or of a block's
    row groups' statistics); then their union by column name (a column a later night added
    reads as NULL in the nights before it). A block that holds nights no longer listed is
    read apart, filtered to those listed."""
    groups: dict[tuple[bool, str, tuple[str, ...]], list[str]] = {}
    for piece in pieces:
        cut = () if wanted.issuperset(piece.nights) else tuple(sorted(wanted & set(piece.nights)))
        groups.setdefault((piece.hive, piece.schema, cut), []).append(str(piece.path))
    reads = []
    for (hive, _, cut), paths in groups.items():
        read = f"SELECT * FROM read_parquet([{', '.join(map(db.literal, paths))}]" + (
            ", hive_partitioning = true)" if hive else ", hive_partitioning = false)"
        )
        if cut:
            read += f" WHERE build_id IN ({', '.join(map(db.literal, cut))})"
        reads.append(read)
    return "\nUNION ALL BY NAME\n".join(reads)


def _comment(con: duckdb.DuckDBPyConnection, view: str, table: SqlFile) -> None:
    """The view's comment and its columns': those of the mart it copies, where there is one."""
    mart = SqlFile(f"marts/{table.name}")
    columns = mart.column_comments if mart.file.is_file() else {}
    columns = {**table.column_comments, **columns}
    db.comment_table(con, view, table.table_comment, columns, kind="VIEW")


def tidy(output: Path) -> list[str]:
    """After the swap: remove every file of history/ that no release kept names (a file
    `NIGHTS_LIST` names, read by that release's views): nights aged out of every kept
    release, a killed or failed build's files, blocks no release read, files a kill left half
    written; and the folders that leaves empty. A release whose list cannot be read keeps
    every file holding a night up to its own. What could not be removed, for the log; the
    next build tries again."""
    root = output / NIGHTS
    named: set[Path] = set()
    up_to = ""  # the newest release whose files are not known: files of nights to it stay
    releases = output / RELEASES
    for release in os.listdir(releases) if releases.is_dir() else []:
        if release.startswith(DISCARDED):
            continue
        pieces = read_record(releases / release, output)
        if pieces is None:
            up_to = max(up_to, release)
        else:
            named |= {p.path for of_table in pieces.values() for p in of_table}
    folders = [root / t.name for t in NIGHT_TABLES] + [
        root / f for f in _names(root) if f.startswith((PARTITION, BLOCK))
    ]
    stale, resolved = [], root.resolve()
    for folder in folders:
        names = _names(folder)
        kept = [n for n in names if _kept(resolved / folder.name / n, named, up_to)]
        if folder.name.startswith(BLOCK) and any(n.endswith(SUFFIX) for n in kept):
            kept.append(BLOCK_NIGHTS)
        stale += [folder / n for n in names if n not in kept]
    problems = _remove(stale)
    for folder in folders:
        if folder.is_dir() and not _names(folder):
            with contextlib.suppress(OSError):  # the next build tries again
                folder.rmdir()
    return problems


def _kept(path: Path, named: set[Path], up_to: str) -> bool:
    """Whether `tidy` keeps `path`: named by a kept release, or holding a night up to
    `up_to` (by its folder's or its name's night)."""
    if path.name.endswith(_WRITING) or not path.name.endswith(SUFFIX):
        return False
    if path in named:
        return True
    folder = path.parent.name
    if folder.startswith(PARTITION):
        first = folder.removeprefix(PARTITION)
    elif folder.startswith(BLOCK):
        first = folder.removeprefix(BLOCK).split(BLOCK_SEPARATOR)[0]
    else:  # the layout before: history/<table>/<build_id>.parquet
        first = path.name.removesuffix(SUFFIX)
    return bool(up_to) and first <= up_to


def _remove(paths: Iterable[Path]) -> list[str]:
    problems = []
    for path in paths:
        try:
            path.unlink(missing_ok=True)
        except OSError as exc:
            problems.append(f"{path}: could not be removed ({exc}); the next build tries again")
    return problems
