"""The raw layer: one file's rows into `raw.<table>`, by column name, as loaded, with source
file, row number and parse error; the bookkeeping columns and the header rules every format
shares."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import duckdb
import polars as pl

from pipeline.contract import Table
from pipeline.db import comment_table, quote
from pipeline.errors import InputError

SOURCE_FILE = "_source_file"
SOURCE_ROW = "_source_row"
PARSE_ERROR = "_parse_error"
RESERVED = (SOURCE_FILE, SOURCE_ROW, PARSE_ERROR)
# What the bookkeeping columns hold, for the comments of every table that carries them.
SOURCE_DOCS = {
    SOURCE_FILE: "Input file, relative to the input directory",
    SOURCE_ROW: "Data record number in that file, from 1 (NDJSON: line number)",
}


def check_names(path: Path, names: Sequence[str]) -> None:
    """Input columns may be named anything but the raw layer's own bookkeeping columns, and
    without a NUL character (which no table column can hold)."""
    taken = [n for n in names if n in RESERVED]
    if taken:
        raise InputError(f"{path}: column name {taken[0]} is reserved")
    broken = [n for n in names if "\x00" in n]
    if broken:
        raise InputError(f"{path}: header: column name {broken[0]!r} holds a NUL character")


def check_required(table: Table, names: Sequence[str], source: str) -> None:
    missing = [c for c in table.required_columns if c not in names]
    if missing:
        raise InputError(f"{source}: missing required column {', '.join(missing)}")


def conform(df: pl.DataFrame, table: Table, source: str) -> pl.DataFrame:
    """Declared columns first (missing optional ones as null), then any extra columns."""
    check_required(table, df.columns, source)
    declared = [
        pl.col(c).cast(pl.String) if c in df.columns else pl.lit(None, pl.String).alias(c)
        for c in table.column_names
    ]
    extras = [
        pl.col(c).cast(pl.String)
        for c in df.columns
        if c not in table.column_names and c not in (SOURCE_FILE, SOURCE_ROW, PARSE_ERROR)
    ]
    error = pl.col(PARSE_ERROR) if PARSE_ERROR in df.columns else pl.lit(None, pl.String)
    return df.select(
        (pl.col(SOURCE_FILE) if SOURCE_FILE in df.columns else pl.lit(source)).alias(SOURCE_FILE),
        pl.col(SOURCE_ROW).cast(pl.Int64),
        error.alias(PARSE_ERROR),
        *declared,
        *extras,
    )


def append_frame(
    con: duckdb.DuckDBPyConnection, table: Table, columns: list[str], frame: pl.DataFrame
) -> int:
    con.register("ingest_frame", frame.to_arrow())
    try:
        return append(con, table, columns, frame.columns, "SELECT * FROM ingest_frame")
    finally:
        con.unregister("ingest_frame")


def append(
    con: duckdb.DuckDBPyConnection,
    table: Table,
    columns: list[str],
    names: list[str],
    select: str,
    params: dict[str, object] | None = None,
) -> int:
    """Add one file's rows (`select`, of columns `names`) to raw.<table>, which the first
    creates, by column name; a column only some files have is added as it comes (null for the
    others). Returns the rows added. One file at a time: the whole input as text would not fit
    in memory at scale. `columns`: raw.<table>'s so far."""
    if not columns:
        create = f"CREATE OR REPLACE TABLE raw.{table.name} AS {select}"
        added = con.execute(create, params).fetchall()
    else:
        for column in names:
            if column not in columns:
                con.execute(f"ALTER TABLE raw.{table.name} ADD COLUMN {quote(column)} VARCHAR")
        added = con.execute(f"INSERT INTO raw.{table.name} BY NAME {select}", params).fetchall()
    columns.extend(c for c in names if c not in columns)
    return int(added[0][0])


def comment_raw_table(con: duckdb.DuckDBPyConnection, table: Table, columns: list[str]) -> None:
    """raw.<table>'s comments: the contract's column docs, and the extra columns as such."""
    docs = {c.name: f"{c.doc} (as written)" for c in table.columns}
    comment_table(
        con,
        f"raw.{table.name}",
        f"{table.doc}: every row of {table.group}/{table.name} as loaded, values as text "
        "(Parquet columns of a type that holds the values: as typed)",
        {
            **SOURCE_DOCS,
            PARSE_ERROR: "Why the row could not be parsed at all (null when it could)",
            **{
                c: docs.get(c, "Extra column, not in the contract: kept as loaded")
                for c in columns
                if c not in RESERVED
            },
        },
    )
