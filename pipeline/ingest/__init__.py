"""Ingest stage: an input table's files -> `raw.<table>`, as loaded, with source file and row.
Nothing is inferred: the contract's declared columns are read, and text is kept as written."""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import duckdb

from pipeline.contract import TABLES, Table
from pipeline.db import comment_table
from pipeline.errors import InputError
from pipeline.ingest.files import InputFile, check_groups, find_files, missing
from pipeline.ingest.parquet import append_parquet, parquet_columns, typed_columns
from pipeline.ingest.raw import (
    SOURCE_FILE,
    append_frame,
    check_required,
    conform,
    create_raw_table,
)
from pipeline.ingest.remote import RemoteFile, downloaded, list_input, named_as
from pipeline.ingest.text import read_file
from pipeline.progress import Advance
from pipeline.settings import MAX_COLUMNS


@dataclass(frozen=True)
class IngestedTable:
    table: Table
    files: tuple[str, ...]
    rows: int


def ingest_table(
    con: duckdb.DuckDBPyConnection,
    input_dir: Path,
    table: Table,
    max_columns: int = MAX_COLUMNS,
) -> IngestedTable:
    files = table_files(input_dir, table)
    typed = raw_types(con, table, files)
    create_raw_table(con, table, typed)
    seen: set[str] = set()
    rows = sum(ingest_file(con, input_dir, table, f, typed, max_columns, seen) for f in files)
    if any(c.keyed for c in table.columns):
        record_keyed_columns(con, table, seen)
    return IngestedTable(table, tuple(f.source(input_dir) for f in files), rows)


def table_files(input_dir: Path, table: Table) -> list[InputFile]:
    """The table's files; none is an error for a required table."""
    files = find_files(input_dir, table)
    if not files and not table.optional:
        raise missing(str(input_dir / table.group / table.name), table)
    return files


def check_input(input_dir: Path) -> None:
    """The input directory exists, and each entry of its tables' folders (`catalog/`,
    `stores/`) belongs to a table (`check_groups`)."""
    try:
        found = input_dir.is_dir()
    except OSError as exc:  # a folder on the way that the build's user may not enter
        raise InputError(f"{input_dir}: cannot read: {exc.strerror or exc}") from exc
    if not found:
        raise InputError(f"{input_dir}: input directory does not exist")
    check_groups(input_dir, TABLES)


def raw_types(
    con: duckdb.DuckDBPyConnection, table: Table, files: Sequence[InputFile]
) -> dict[str, str]:
    """The declared columns that `raw.<table>` keeps typed: those its Parquet files all hold in
    a type that holds their values (`typed_columns`); the rest are text."""
    schemas = {f.path: parquet_columns(con, f.path) for f in files if f.format == "parquet"}
    return typed_columns(table, [f.path for f in files], schemas)


def ingest_file(
    con: duckdb.DuckDBPyConnection,
    input_dir: Path,
    table: Table,
    file: InputFile,
    typed: dict[str, str],
    max_columns: int = MAX_COLUMNS,
    seen: set[str] | None = None,
) -> int:
    """Append one file's rows to `raw.<table>` (created with `typed`); returns how many. The
    file's column names are added to `seen`."""
    source = file.source(input_dir)
    if file.format == "parquet":
        found = parquet_columns(con, file.path)
        if seen is not None:
            seen.update(found)
        added = append_parquet(con, table, file.path, source, found, typed, max_columns)
        file.check_unchanged()
        return added
    rows = 0
    columns: set[str] = set()
    sources: set[str] = set()
    for frame in read_file(file, table, source, max_columns):
        if frame is None:  # the file is read again from its start: forget its rows so far
            con.execute(
                f"DELETE FROM raw.{table.name} WHERE {SOURCE_FILE} IN (SELECT unnest($s))",
                {"s": sorted(sources)},
            )
            rows = 0
            continue
        columns.update(frame.columns)
        conformed = conform(frame, table, source)
        sources.update(conformed[SOURCE_FILE].unique().to_list())
        rows += append_frame(con, table, conformed)
    file.check_unchanged()
    if file.format in ("ndjson", "json") and rows == 0:
        return 0  # no records, so no columns to check
    check_required(table, sorted(columns), source)
    if seen is not None:
        seen.update(columns)
    return rows


def record_keyed_columns(con: duckdb.DuckDBPyConnection, table: Table, seen: set[str]) -> None:
    """`meta.input_columns`: which of the table's keyed columns (published only when the input
    carries them) its files carry."""
    con.execute("CREATE SCHEMA IF NOT EXISTS meta")
    con.execute(
        "CREATE TABLE IF NOT EXISTS meta.input_columns (table_name VARCHAR, column_name VARCHAR)"
    )
    con.execute("DELETE FROM meta.input_columns WHERE table_name = ?", [table.name])
    keyed = [c.name for c in table.columns if c.keyed and c.name in seen]
    for column in keyed:
        con.execute("INSERT INTO meta.input_columns VALUES (?, ?)", [table.name, column])
    comment_table(
        con,
        "meta.input_columns",
        "One row per keyed input column (a key published only when the input carries the "
        "column, such as the categories' isDirect) that the table's files carry",
        {"table_name": "Input table", "column_name": "Contract column the files carry"},
    )


def ingest_object(
    con: duckdb.DuckDBPyConnection,
    table: Table,
    file: RemoteFile,
    typed: dict[str, str],
    max_columns: int = MAX_COLUMNS,
) -> int:
    """`ingest_file` of an object: downloaded into a scratch folder of this machine's, read,
    and removed."""
    with tempfile.TemporaryDirectory(prefix="pipeline-input-") as scratch:
        root = Path(scratch)
        local = file.download(root)
        with named_as(root, file.url):
            return ingest_file(con, root, table, local, typed, max_columns)


def ingest_all(
    con: duckdb.DuckDBPyConnection,
    source: Path | str,
    advance: Advance | None = None,
    max_columns: int = MAX_COLUMNS,
    scratch: Path | None = None,
) -> list[IngestedTable]:
    """Every table of the input: a directory, or an object-store URL whose objects are
    downloaded under `scratch` (a temporary folder if None) and removed once read."""
    if isinstance(source, Path):
        return _ingest_directory(con, source, advance, max_columns)
    with downloaded(list_input(source), scratch, TABLES) as input_dir:
        return _ingest_directory(con, input_dir, advance, max_columns)


def _ingest_directory(
    con: duckdb.DuckDBPyConnection,
    input_dir: Path,
    advance: Advance | None,
    max_columns: int,
) -> list[IngestedTable]:
    check_input(input_dir)
    con.execute("CREATE SCHEMA IF NOT EXISTS raw")
    tables = []
    for table in TABLES:
        tables.append(ingest_table(con, input_dir, table, max_columns))
        if advance:
            advance(1)
    return tables
