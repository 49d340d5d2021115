"""Parquet files: loaded into `raw.<table>` by DuckDB alone (the rows never pass through
Python), a declared column keeping its Parquet type when that type holds the column's values in
every file of the table (`typed_column`), every other column as text."""

from __future__ import annotations

import re
from pathlib import Path

import duckdb
import pyarrow as pa  # type: ignore[import-untyped]  # no stubs
import pyarrow.parquet as pq  # type: ignore[import-untyped]

from pipeline.contract import Kind, Table
from pipeline.db import quote
from pipeline.errors import InputError, first_line
from pipeline.ingest.raw import (
    EXTRA_COLUMNS,
    MAX_RECORD_BYTES,
    PARSE_ERROR,
    SOURCE_FILE,
    SOURCE_ROW,
    TOO_LONG,
    append,
    check_names,
    check_required,
    check_unique,
)

_INTEGERS = {"TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT"}
_INTEGERS |= {"U" + t for t in _INTEGERS}
# Types whose values are a few bytes as text, whatever they hold.
_SHORT = re.compile(
    r"U?(TINY|SMALL|BIG|HUGE)?INT(EGER)?|FLOAT|DOUBLE|DECIMAL\(\d+,\d+\)|BOOLEAN|DATE|TIME.*|INTERVAL|UUID"
)


def typed_column(kind: Kind, dtype: str) -> bool:
    """Whether a Parquet column of DuckDB type `dtype` is loaded with its type, for a declared
    column of `kind`: its values need no parsing, only the range and sign checks
    (`pipeline.transform.rules`). Text, lists and anything else are loaded as text."""
    if kind in (Kind.INT32, Kind.INT64):
        return dtype in _INTEGERS
    if kind is Kind.MONEY:
        decimal = re.fullmatch(r"DECIMAL\(\d+,(\d+)\)", dtype)
        return decimal is not None and int(decimal[1]) <= 2
    return (kind, dtype) in ((Kind.BOOL, "BOOLEAN"), (Kind.TIMESTAMP, "TIMESTAMP"))


def _can_be_long(dtype: str) -> bool:
    """Whether a column of DuckDB type `dtype`, as text, can hold a long value."""
    return _SHORT.fullmatch(dtype) is None


def parquet_columns(con: duckdb.DuckDBPyConnection, path: Path) -> dict[str, str]:
    """column -> DuckDB type of a Parquet file. A column named twice is refused: DuckDB would
    read the second as `<name>_1`, and the first would win in silence."""
    try:
        path.open("rb").close()  # one line for a file that cannot be opened, as for the others
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    try:
        written = pq.read_schema(path).names
    except (OSError, pa.ArrowException) as exc:
        raise InputError(f"{path}: cannot read Parquet: {first_line(exc)}") from exc
    check_unique(path, written)
    try:
        rel = con.read_parquet(str(path))
        return {name: str(dtype) for name, dtype in zip(rel.columns, rel.dtypes, strict=True)}
    except duckdb.Error as exc:
        raise InputError(f"{path}: cannot read Parquet: {first_line(exc)}") from exc


def typed_columns(
    table: Table, files: list[Path], schemas: dict[Path, dict[str, str]]
) -> dict[str, str]:
    """The declared columns loaded with their type (column -> type): those of a table whose
    files are all Parquet (`schemas`: each one's columns), with the same type in every file
    that has the column."""
    if not files or any(p not in schemas for p in files):
        return {}
    seen: dict[str, set[str]] = {}
    for path in files:
        for name, dtype in schemas[path].items():
            seen.setdefault(name, set()).add(dtype)
    kinds = {c.name: c.kind for c in table.columns}
    return {
        name: dtype
        for name, (dtype, *others) in seen.items()
        if name in kinds and not others and typed_column(kinds[name], dtype)
    }


def append_parquet(
    con: duckdb.DuckDBPyConnection,
    table: Table,
    path: Path,
    source: str,
    found: dict[str, str],
    typed: dict[str, str],
    max_columns: int,
) -> int:
    """A Parquet file (of columns `found`: column -> type) into raw.<table> by DuckDB alone,
    conformed as `raw.conform` does: the `typed` columns as they are, the others as text (nested
    ones as JSON), the extra ones packed into `_extra_columns`. The rows never pass through
    Python."""
    try:
        names = list(found)
        check_names(path, names, max_columns)
        check_required(table, names, source)
        value = {c: f"NULL::{t}" for c, t in typed.items()}
        for name, dtype in found.items():
            quoted = quote(name)
            if name in typed:
                value[name] = quoted
            elif dtype.endswith("[]") or dtype.startswith(("STRUCT", "MAP")):
                value[name] = f"to_json({quoted})::VARCHAR"
            else:
                value[name] = f"{quoted}::VARCHAR"
        extras = [c for c in names if c not in table.column_names]
        packed = ", ".join(f"{quote(c)} := {value[c]}" for c in extras)
        # The row's text, limited as a record of a text file is: the columns of a type that
        # can be long (a number or a date as text cannot; leaving them out saves a cast each).
        long = [c for c, t in found.items() if c not in typed and _can_be_long(t)]
        size = " + ".join(f"coalesce(strlen({value[c]}), 0)" for c in long) or "0"
        select = ", ".join(
            [
                f"$source AS {SOURCE_FILE}",
                f"file_row_number + 1 AS {SOURCE_ROW}",
                f"CASE WHEN {size} > $max THEN $too_long END AS {PARSE_ERROR}",
                *(f"{value.get(c, 'NULL::VARCHAR')} AS {quote(c)}" for c in table.column_names),
                (f"to_json(struct_pack({packed}))::VARCHAR" if extras else "NULL::VARCHAR")
                + f" AS {EXTRA_COLUMNS}",
            ]
        )
        sql = f"SELECT {select} FROM read_parquet($path, file_row_number = true)"
        params = {"source": source, "path": str(path), "max": MAX_RECORD_BYTES}
        return append(con, table, sql, {**params, "too_long": TOO_LONG})
    except duckdb.Error as exc:
        raise InputError(f"{path}: cannot read Parquet: {first_line(exc)}") from exc
