"""Ingest stage: raw export files -> `raw.<table>` in DuckDB, as loaded, with source file and row.

Text formats are loaded as the text that was written (NDJSON scalars as their JSON text, lists
as JSON arrays), so that staging parses it with declared types and a bad value can be reported
as it was. A declared column of a table whose files are all Parquet keeps its Parquet type when
that type holds the column's values (`typed_column`: integers, decimals of at most two places,
booleans, timestamps): there is no text to parse, and casting millions of typed values to text
and back cost most of the ingest and staging at scale. Any other column is text. Nothing is
inferred: the declared columns of `pipeline.contract` are read, missing optional columns are
null, unknown extra columns are kept as they are (as text).

A table is either one file `<group>/<table>.<ext>` or a folder `<group>/<table>/*.<ext>`, with
`.csv`, `.parquet`, `.ndjson` or `.jsonl` files. Row numbers count data records from 1 (a CSV
header is not a record; an NDJSON row number is its line number).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import duckdb
import polars as pl

from pipeline.contract import TABLES, Table
from pipeline.errors import InputError
from pipeline.ingest.parquet import append_parquet, parquet_columns, typed_columns
from pipeline.ingest.raw import SOURCE_ROW, append_frame, comment_raw_table, conform
from pipeline.ingest.text import read_file
from pipeline.progress import Advance

EXTENSIONS = (".csv", ".parquet", ".ndjson", ".jsonl", ".json")  # .json: catalog API dumps


@dataclass(frozen=True)
class IngestedTable:
    table: Table
    files: tuple[str, ...]
    rows: int


def find_files(input_dir: Path, table: Table) -> list[Path]:
    """The files of a table, in a stable (sorted) order."""
    base = input_dir / table.group
    files = [
        base / f"{table.name}{ext}" for ext in EXTENSIONS if (base / f"{table.name}{ext}").is_file()
    ]
    folder = base / table.name
    if folder.is_dir():
        files += [p for p in folder.iterdir() if p.is_file() and p.suffix in EXTENSIONS]
    return sorted(files)


def ingest_table(con: duckdb.DuckDBPyConnection, input_dir: Path, table: Table) -> IngestedTable:
    files = find_files(input_dir, table)
    if not files and not table.optional:
        raise InputError(
            f"{input_dir / table.group / table.name}: missing required input "
            f"(expected {table.name}.csv|.parquet|.ndjson or a folder of such files)"
        )
    columns: list[str] = []  # of raw.<table> so far: files are loaded one at a time
    rows = 0
    schemas = {p: parquet_columns(con, p) for p in files if p.suffix == ".parquet"}
    typed = typed_columns(table, files, schemas)
    for path in files:
        source = path.relative_to(input_dir).as_posix()
        if path in schemas:
            rows += append_parquet(con, table, path, source, columns, schemas[path], typed)
            continue
        frame = read_file(path, table, source)
        if path.suffix in (".ndjson", ".jsonl", ".json") and frame.height == 0:
            continue  # no records, so no columns to check
        rows += append_frame(con, table, columns, conform(frame, table, source))
    if not columns:
        empty = {c: pl.Series([], dtype=pl.String) for c in table.column_names}
        frame = pl.DataFrame({SOURCE_ROW: pl.Series([], dtype=pl.Int64), **empty})
        append_frame(con, table, columns, conform(frame, table, ""))
    comment_raw_table(con, table, columns)
    return IngestedTable(table, tuple(p.relative_to(input_dir).as_posix() for p in files), rows)


def ingest_all(
    con: duckdb.DuckDBPyConnection, input_dir: Path, advance: Advance | None = None
) -> list[IngestedTable]:
    if not input_dir.is_dir():
        raise InputError(f"{input_dir}: input directory does not exist")
    con.execute("CREATE SCHEMA IF NOT EXISTS raw")
    tables = []
    for table in TABLES:
        tables.append(ingest_table(con, input_dir, table))
        if advance:
            advance(1)
    return tables
