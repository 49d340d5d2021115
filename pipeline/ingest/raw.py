"""The raw layer: one file's rows into `raw.<table>`, by column name, as loaded, with source
file, row number and parse error. Columns outside the contract are packed into one JSON
column, `_extra_columns`: DuckDB adds columns one statement at a time, at a cost that grows
with the square of their number."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import duckdb
import orjson
import polars as pl

from pipeline.contract import NESTED_KINDS, Table
from pipeline.db import quote
from pipeline.errors import InputError

SOURCE_FILE = "_source_file"
SOURCE_ROW = "_source_row"
PARSE_ERROR = "_parse_error"
EXTRA_COLUMNS = "_extra_columns"
RESERVED = (SOURCE_FILE, SOURCE_ROW, PARSE_ERROR, EXTRA_COLUMNS)
# What the bookkeeping columns hold, for the comments of every table that carries them.
SOURCE_DOCS = {
    SOURCE_FILE: "Input file, relative to the input directory",
    SOURCE_ROW: "Data record number in that file, from 1 (NDJSON: line number)",
}
# The longest record an input may hold, in bytes as written: a CSV record (line breaks inside
# its quotes included) or an NDJSON line. A longer one is a reject, read past in pieces of this
# size, so that no field of any length is ever held whole; every field is bounded by it too.
MAX_RECORD_BYTES = 1 << 20
TOO_LONG = f"longer than {MAX_RECORD_BYTES:,} bytes, the limit of a record and of its fields"
# Text (CSV, NDJSON, decompressed) is read, parsed and appended to raw.<table> in batches of at
# most this many bytes and this many cells (records x columns: a cell costs tens of bytes as a
# frame and more as Python objects), so that neither a file's size, compressed or not, nor its
# shape decides the build's memory.
BATCH_BYTES = 8 << 20
BATCH_CELLS = 1_000_000
EXTRA_DOC = (
    "The file's columns that are not in the contract, as a JSON object of name -> value as "
    "written (null when it has none): `_extra_columns->>'name'`"
)


def json_text(value: object) -> str | None:
    """A parsed JSON value as raw text, one rule for every JSON format: a string as it is, null
    as null, any other value as JSON writes it (true, 1.0, 1e20, 0.30000000000000004, [1,2])."""
    if value is None:
        return None
    return value if isinstance(value, str) else orjson.dumps(value).decode()


def json_values(obj: dict[str, Any], scalar_columns: frozenset[str]) -> dict[str, str | None]:
    """A JSON record's values as text (`json_text`; an object or an array as its JSON text,
    kept whole: a nested column of the contract, an optional column, or an extra column), or
    its parse error: an object or array in a required column that holds a value
    (`scalar_columns`), or a value nested deeper than JSON is written here (orjson's limit): a
    reject, not a crash."""
    nested = [k for k, v in obj.items() if isinstance(v, dict | list) and k in scalar_columns]
    if nested:
        return {PARSE_ERROR: f"{nested[0]}: a JSON object or array, not a value"}
    values: dict[str, str | None] = {}
    for key, value in obj.items():
        try:
            values[key] = json_text(value)
        except orjson.JSONEncodeError as exc:
            return {PARSE_ERROR: f"{key}: nested too deeply ({exc})"}
    return values


def scalar_columns(table: Table) -> frozenset[str]:
    """The table's required columns that hold one value, not a JSON array or object: an object
    or array in one is a parse error. In an optional column it is its JSON text, as Parquet's
    are, which a column of a kind other than text cannot read (a warning, not a reject)."""
    return frozenset(c.name for c in table.columns if c.required and c.kind not in NESTED_KINDS)


def check_width(path: Path, columns: int, max_columns: int) -> None:
    if columns > max_columns:
        raise InputError(
            f"{path}: header: {columns:,} columns, more than build.max_columns ({max_columns:,})"
        )


def check_names(path: Path, names: Sequence[str], max_columns: int) -> None:
    """A file's column names: at most `max_columns` of them, each named, once, and neither one
    of the raw layer's own bookkeeping columns nor holding a NUL character (which no table
    column can hold)."""
    check_width(path, len(names), max_columns)
    taken = [n for n in names if n in RESERVED]
    if taken:
        raise InputError(f"{path}: column name {taken[0]} is reserved")
    broken = [n for n in names if "\x00" in n]
    if broken:
        raise InputError(f"{path}: header: column name {broken[0]!r} holds a NUL character")
    if "" in names:
        position = names.index("")
        hint = " (a trailing comma?)" if position == len(names) - 1 else ""
        raise InputError(f"{path}: header: column {position + 1} has no name{hint}")
    check_unique(path, names)


def check_unique(path: Path, names: Sequence[str]) -> None:
    """No column named twice."""
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise InputError(f"{path}: header: column {name} appears more than once")
        seen.add(name)


def check_required(table: Table, names: Sequence[str], source: str) -> None:
    missing = [c for c in table.required_columns if c not in names]
    if missing:
        raise InputError(f"{source}: missing required column {', '.join(missing)}")


def conform(df: pl.DataFrame, table: Table, source: str) -> pl.DataFrame:
    """The columns of raw.<table>: bookkeeping, the declared ones (missing optional ones as
    null), then any others packed into `_extra_columns`. A file's required columns are checked
    once it is read (`check_required`, over the columns of all its batches)."""
    declared = [
        pl.col(c).cast(pl.String) if c in df.columns else pl.lit(None, pl.String).alias(c)
        for c in table.column_names
    ]
    extras = [c for c in df.columns if c not in table.column_names and c not in RESERVED]
    packed = (
        pl.struct([pl.col(c).cast(pl.String) for c in extras]).struct.json_encode()
        if extras
        else pl.lit(None, pl.String)
    )
    error = pl.col(PARSE_ERROR) if PARSE_ERROR in df.columns else pl.lit(None, pl.String)
    return df.select(
        (pl.col(SOURCE_FILE) if SOURCE_FILE in df.columns else pl.lit(source)).alias(SOURCE_FILE),
        pl.col(SOURCE_ROW).cast(pl.Int64),
        error.alias(PARSE_ERROR),
        *declared,
        packed.alias(EXTRA_COLUMNS),
    )


def text_frame(
    records: list[dict[str, str | int | None]],
    header: Sequence[str] = (),
    *,
    path: Path,
    max_columns: int,
) -> pl.DataFrame:
    """Records (NDJSON, CSV record by record, catalog API results) as a frame of text columns:
    the header's columns, then any others the records have, at most `max_columns` of them."""
    columns = list(dict.fromkeys([SOURCE_ROW, *header, *(k for r in records for k in r)]))
    check_width(path, sum(c not in RESERVED for c in columns), max_columns)
    return pl.DataFrame(
        {c: [r.get(c) for r in records] for c in columns},
        schema={c: (pl.Int64 if c == SOURCE_ROW else pl.String) for c in columns},
    )


def create_raw_table(con: duckdb.DuckDBPyConnection, table: Table, typed: dict[str, str]) -> None:
    """raw.<table>, empty, in one statement: its columns are the same whatever the files hold
    (`typed`: the declared columns that keep their Parquet type, column -> type)."""
    columns = [
        f"{SOURCE_FILE} VARCHAR",
        f"{SOURCE_ROW} BIGINT",
        f"{PARSE_ERROR} VARCHAR",
        *(f"{quote(c)} {typed.get(c, 'VARCHAR')}" for c in table.column_names),
        f"{EXTRA_COLUMNS} VARCHAR",
    ]
    con.execute(f"CREATE OR REPLACE TABLE raw.{table.name} ({', '.join(columns)})")


def append_frame(con: duckdb.DuckDBPyConnection, table: Table, frame: pl.DataFrame) -> int:
    con.register("ingest_frame", frame.to_arrow())
    try:
        return append(con, table, "SELECT * FROM ingest_frame")
    finally:
        con.unregister("ingest_frame")


def append(
    con: duckdb.DuckDBPyConnection,
    table: Table,
    select: str,
    params: dict[str, object] | None = None,
) -> int:
    """Add one file's rows (`select`, of the columns of raw.<table>) to raw.<table>, by column
    name. Returns the rows added. One file at a time: the whole input as text would not fit in
    memory at scale."""
    added = con.execute(f"INSERT INTO raw.{table.name} BY NAME {select}", params).fetchall()
    return int(added[0][0])


def raw_comments(table: Table) -> tuple[str, dict[str, str]]:
    """raw.<table>'s comments (the table's, and its columns'): the contract's column docs and
    the bookkeeping columns'."""
    return (
        f"{table.doc}: every row of {table.group}/{table.name} as loaded, values as text "
        "(Parquet columns of a type that holds the values: as typed)",
        {
            **SOURCE_DOCS,
            PARSE_ERROR: "Why the row could not be parsed at all (null when it could)",
            **{c.name: f"{c.doc} (as written)" for c in table.columns},
            EXTRA_COLUMNS: EXTRA_DOC,
        },
    )
