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

import csv
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import duckdb
import orjson
import polars as pl

from pipeline import adapters
from pipeline.contract import TABLES, Kind, Table
from pipeline.db import comment_table, literal, quote

SOURCE_FILE = "_source_file"
SOURCE_ROW = "_source_row"
PARSE_ERROR = "_parse_error"
EXTENSIONS = (".csv", ".parquet", ".ndjson", ".jsonl", ".json")  # .json: catalog API dumps
MAX_FIELD = 1 << 20  # characters; a longer CSV field makes its record a reject


class InputError(Exception):
    """A problem with the input that stops the build: names the file and what is wrong."""


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


def _read_csv(path: Path) -> pl.DataFrame:
    """polars' fast reader; a file it refuses (a record with more fields than the header,
    bytes that are not UTF-8, ...) is read again record by record, keeping the bad records as
    rows with a parse error. A record with fewer fields than the header reads its missing
    trailing cells as empty (spreadsheet exports drop trailing empty cells)."""
    try:
        frame = pl.read_csv(
            path,
            infer_schema=False,
            row_index_name=SOURCE_ROW,
            row_index_offset=1,
            encoding="utf8",
        )
        _check_names(path, [c for c in frame.columns if c != SOURCE_ROW])
        # polars reads a blank line and a record of empty cells alike, as a row of nulls: the
        # record reader tells them apart (a blank line is no record; `,,,` is a bad one).
        data = [c for c in frame.columns if c != SOURCE_ROW]
        if data and frame.select(pl.all_horizontal(pl.col(data).is_null()).any()).item():
            return _read_csv_by_record(path)
        return frame
    except pl.exceptions.NoDataError:
        return pl.DataFrame({SOURCE_ROW: pl.Series([], dtype=pl.UInt32)})
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    except Exception:  # polars raises several error types for malformed CSV
        return _read_csv_by_record(path)


def _read_csv_by_record(path: Path) -> pl.DataFrame:
    """The slow, forgiving reader: one row per CSV record, bad records kept with the reason."""
    csv.field_size_limit(sys.maxsize)
    records: list[dict[str, str | int | None]] = []
    with path.open("r", encoding="utf-8", errors="surrogateescape", newline="") as fh:
        reader = csv.reader(fh)
        header = next(reader, None)
        if header is None:
            return pl.DataFrame({SOURCE_ROW: pl.Series([], dtype=pl.Int64)})
        header = [h.removeprefix("\ufeff") for h in header]
        _check_names(path, header)
        if _has_bad_bytes(header) or len(set(header)) != len(header):
            raise InputError(f"{path}: the header is not valid UTF-8 or repeats a column name")
        row = 0
        for fields in reader:
            row += 1
            if not fields:
                continue  # a blank line is no record, but counts, as in the fast reader
            record: dict[str, str | int | None] = {SOURCE_ROW: row}
            if _has_bad_bytes(fields):
                record[PARSE_ERROR] = "not valid UTF-8"
            elif len(fields) > len(header):
                record[PARSE_ERROR] = f"{len(fields)} fields, the header has {len(header)}"
            elif any(len(f) > MAX_FIELD for f in fields):
                record[PARSE_ERROR] = f"a field is longer than {MAX_FIELD} characters"
            else:
                cells = zip(header, fields, strict=False)  # missing trailing cells stay null
                record.update((h, v if v != "" else None) for h, v in cells)
            records.append(record)
    return _frame(records, header)


RESERVED = (SOURCE_FILE, SOURCE_ROW, PARSE_ERROR)


def _check_names(path: Path, names: Sequence[str]) -> None:
    """Input columns may be named anything but the raw layer's own bookkeeping columns, and
    without a NUL character (which no table column can hold)."""
    taken = [n for n in names if n in RESERVED]
    if taken:
        raise InputError(f"{path}: column name {taken[0]} is reserved")
    broken = [n for n in names if "\x00" in n]
    if broken:
        raise InputError(f"{path}: header: column name {broken[0]!r} holds a NUL character")


def _has_bad_bytes(fields: list[str]) -> bool:
    return any("\udc80" <= c <= "\udcff" for f in fields for c in f)


def _frame(records: list[dict[str, str | int | None]], header: Sequence[str] = ()) -> pl.DataFrame:
    """Rows as a frame of text columns: the header's columns, then any others the rows have."""
    columns = list(dict.fromkeys([SOURCE_ROW, *header, *(k for r in records for k in r)]))
    return pl.DataFrame(
        {c: [r.get(c) for r in records] for c in columns},
        schema={c: (pl.Int64 if c == SOURCE_ROW else pl.String) for c in columns},
    )


def _json_text(value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value) if isinstance(value, float) else str(value)
    return orjson.dumps(value).decode()


def _read_ndjson(path: Path, list_columns: frozenset[str]) -> pl.DataFrame:
    """One row per non-blank line; a line that is not a JSON object, or that has an object or
    an array where a scalar belongs, is kept with a parse error."""
    records: list[dict[str, str | int | None]] = []
    try:
        with path.open("rb") as fh:
            for line_no, line in enumerate(fh, start=1):
                if not line.strip():
                    continue
                record: dict[str, str | int | None] = {SOURCE_ROW: line_no}
                try:
                    obj = orjson.loads(line)
                except orjson.JSONDecodeError as exc:
                    record[PARSE_ERROR] = f"not valid JSON: {exc}"
                else:
                    if not isinstance(obj, dict):
                        record[PARSE_ERROR] = "not a JSON object"
                    elif any(k in RESERVED for k in obj):
                        record[PARSE_ERROR] = "uses a reserved key (_source_file, ...)"
                    else:
                        nested = [
                            k
                            for k, v in obj.items()
                            if isinstance(v, dict | list) and k not in list_columns
                        ]
                        if nested:
                            record[PARSE_ERROR] = (
                                f"{nested[0]}: a JSON object or array, not a value"
                            )
                        else:
                            record.update({k: _json_text(v) for k, v in obj.items()})
                records.append(record)
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror}") from exc
    return _frame(records)


_INTEGERS = {"TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT"}
_INTEGERS |= {"U" + t for t in _INTEGERS}


def typed_column(kind: Kind, dtype: str) -> bool:
    """Whether a Parquet column of DuckDB type `dtype` is loaded with its type, for a declared
    column of `kind`: its values need no parsing, only the range and sign checks
    (`pipeline.checks`). Text, lists and anything else are loaded as text."""
    if kind in (Kind.INT32, Kind.INT64):
        return dtype in _INTEGERS
    if kind is Kind.MONEY:
        decimal = re.fullmatch(r"DECIMAL\(\d+,(\d+)\)", dtype)
        return decimal is not None and int(decimal[1]) <= 2
    return (kind, dtype) in ((Kind.BOOL, "BOOLEAN"), (Kind.TIMESTAMP, "TIMESTAMP"))


def _parquet_columns(con: duckdb.DuckDBPyConnection, path: Path) -> dict[str, str]:
    """column -> DuckDB type of a Parquet file."""
    try:
        rel = con.read_parquet(str(path))
        return {name: str(dtype) for name, dtype in zip(rel.columns, rel.dtypes, strict=True)}
    except duckdb.Error as exc:
        raise InputError(f"{path}: cannot read Parquet: {str(exc).splitlines()[0]}") from exc


def _typed_columns(
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


def _append_parquet(
    con: duckdb.DuckDBPyConnection,
    table: Table,
    path: Path,
    source: str,
    columns: list[str],
    found: dict[str, str],
    typed: dict[str, str],
) -> int:
    """A Parquet file (of columns `found`: column -> type) into raw.<table> by DuckDB alone,
    conformed as `_conform` does: the `typed` columns as they are, the others as text (nested
    ones as JSON). The rows never pass through Python."""
    try:
        names = list(found)
        _check_names(path, names)
        _check_required(table, names, source)
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
        select = ", ".join(
            [
                f"{literal(source)} AS {SOURCE_FILE}",
                f"file_row_number + 1 AS {SOURCE_ROW}",
                f"NULL::VARCHAR AS {PARSE_ERROR}",
                *(f"{value.get(c, 'NULL::VARCHAR')} AS {quote(c)}" for c in table.column_names),
                *(f"{value[c]} AS {quote(c)}" for c in extras),
            ]
        )
        output = [SOURCE_FILE, SOURCE_ROW, PARSE_ERROR, *table.column_names, *extras]
        sql = f"SELECT {select} FROM read_parquet({literal(str(path))}, file_row_number = true)"
        return _append(con, table, columns, output, sql)
    except duckdb.Error as exc:
        raise InputError(f"{path}: cannot read Parquet: {str(exc).splitlines()[0]}") from exc


def read_file(path: Path, table: Table, source: str) -> pl.DataFrame:
    """A CSV, NDJSON or API dump file's rows as text columns plus `_source_row` (and
    `_source_file` when a converted format splits one file into several sources). Parquet
    files go to DuckDB directly (`_append_parquet`)."""
    try:
        if path.suffix == ".json":
            return adapters.read_api_dump(path, table.name)
        if path.suffix == ".csv":
            frame = _read_csv(path)
            if table.name == "listings" and adapters.is_seller_portal(frame.columns):
                return adapters.from_seller_portal(frame, path.stem, source)
            return frame
    except adapters.AdapterError as exc:
        raise InputError(f"{path}: {exc}") from exc
    lists = frozenset(c.name for c in table.columns if c.kind is Kind.TEXT_LIST)
    return _read_ndjson(path, lists)


def _check_required(table: Table, names: Sequence[str], source: str) -> None:
    missing = [c for c in table.required_columns if c not in names]
    if missing:
        raise InputError(f"{source}: missing required column {', '.join(missing)}")


def _conform(df: pl.DataFrame, table: Table, source: str) -> pl.DataFrame:
    """Declared columns first (missing optional ones as null), then any extra columns."""
    _check_required(table, df.columns, source)
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


def ingest_table(con: duckdb.DuckDBPyConnection, input_dir: Path, table: Table) -> IngestedTable:
    files = find_files(input_dir, table)
    if not files and not table.optional:
        raise InputError(
            f"{input_dir / table.group / table.name}: missing required input "
            f"(expected {table.name}.csv|.parquet|.ndjson or a folder of such files)"
        )
    columns: list[str] = []  # of raw.<table> so far: files are loaded one at a time
    rows = 0
    schemas = {p: _parquet_columns(con, p) for p in files if p.suffix == ".parquet"}
    typed = _typed_columns(table, files, schemas)
    for path in files:
        source = path.relative_to(input_dir).as_posix()
        if path in schemas:
            rows += _append_parquet(con, table, path, source, columns, schemas[path], typed)
            continue
        frame = read_file(path, table, source)
        if path.suffix in (".ndjson", ".jsonl", ".json") and frame.height == 0:
            continue  # no records, so no columns to check
        rows += _append_frame(con, table, columns, _conform(frame, table, source))
    if not columns:
        empty = {c: pl.Series([], dtype=pl.String) for c in table.column_names}
        frame = pl.DataFrame({SOURCE_ROW: pl.Series([], dtype=pl.Int64), **empty})
        _append_frame(con, table, columns, _conform(frame, table, ""))
    docs = {c.name: f"{c.doc} (as written)" for c in table.columns}
    comment_table(
        con,
        f"raw.{table.name}",
        f"{table.doc}: every row of {table.group}/{table.name} as loaded, values as text "
        "(Parquet columns of a type that holds the values: as typed)",
        {
            SOURCE_FILE: "Input file, relative to the input directory",
            SOURCE_ROW: "Data record number in that file, from 1 (NDJSON: line number)",
            PARSE_ERROR: "Why the row could not be parsed at all (null when it could)",
            **{
                c: docs.get(c, "Extra column, not in the contract: kept as loaded")
                for c in columns
                if c not in (SOURCE_FILE, SOURCE_ROW, PARSE_ERROR)
            },
        },
    )
    return IngestedTable(table, tuple(p.relative_to(input_dir).as_posix() for p in files), rows)


def _append_frame(
    con: duckdb.DuckDBPyConnection, table: Table, columns: list[str], frame: pl.DataFrame
) -> int:
    con.register("ingest_frame", frame.to_arrow())
    try:
        return _append(con, table, columns, frame.columns, "SELECT * FROM ingest_frame")
    finally:
        con.unregister("ingest_frame")


def _append(
    con: duckdb.DuckDBPyConnection, table: Table, columns: list[str], names: list[str], select: str
) -> int:
    """Add one file's rows (`select`, of columns `names`) to raw.<table>, which the first
    creates, by column name; a column only some files have is added as it comes (null for the
    others). Returns the rows added. One file at a time: the whole input as text would not fit
    in memory at scale. `columns`: raw.<table>'s so far."""
    if not columns:
        added = con.execute(f"CREATE OR REPLACE TABLE raw.{table.name} AS {select}").fetchall()
    else:
        for column in names:
            if column not in columns:
                con.execute(f"ALTER TABLE raw.{table.name} ADD COLUMN {quote(column)} VARCHAR")
        added = con.execute(f"INSERT INTO raw.{table.name} BY NAME {select}").fetchall()
    columns.extend(c for c in names if c not in columns)
    return int(added[0][0])


def ingest_all(
    con: duckdb.DuckDBPyConnection, input_dir: Path, advance: Callable[[int], None] | None = None
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
