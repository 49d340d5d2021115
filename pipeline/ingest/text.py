"""Text formats: CSV and NDJSON files (and, through `adapters`, Seller Portal exports and
catalog API dumps) read as the text that was written, one row per record, with its row number;
a record that cannot be read is kept with the reason, to become a reject."""

from __future__ import annotations

import csv
import sys
from collections.abc import Sequence
from pathlib import Path

import orjson
import polars as pl

from pipeline.contract import Kind, Table
from pipeline.errors import InputError
from pipeline.ingest import adapters
from pipeline.ingest.raw import PARSE_ERROR, RESERVED, SOURCE_ROW, check_names

MAX_FIELD = 1 << 20  # characters; a longer CSV field makes its record a reject
csv.field_size_limit(sys.maxsize)  # the csv module's own limit: MAX_FIELD is checked instead


def _read_csv(path: Path) -> pl.DataFrame:
    """polars' fast reader; a file it refuses (a record with more fields than the header,
    bytes that are not UTF-8, ...) is read again record by record, keeping the bad records as
    rows with a parse error. A record with fewer fields than the header reads its missing
    trailing cells as empty (spreadsheet exports drop trailing empty cells)."""
    check_names(path, _header(path))  # before reading: a reserved name is no reason to retry
    try:
        frame = pl.read_csv(
            path,
            infer_schema=False,
            row_index_name=SOURCE_ROW,
            row_index_offset=1,
            encoding="utf8",
        )
    except pl.exceptions.NoDataError:
        return pl.DataFrame({SOURCE_ROW: pl.Series([], dtype=pl.UInt32)})
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    except pl.exceptions.PolarsError:  # a malformed record or bytes: read record by record
        return _read_csv_by_record(path)
    data = [c for c in frame.columns if c != SOURCE_ROW]
    # polars reads a blank line and a record of empty cells alike, as a row of nulls: the
    # record reader tells them apart (a blank line is no record; `,,,` is a bad one).
    if data and frame.select(pl.all_horizontal(pl.col(data).is_null()).any()).item():
        return _read_csv_by_record(path)
    return frame


def _header(path: Path) -> list[str]:
    """The column names of a CSV file's first record (none for an empty file)."""
    try:
        with path.open("r", encoding="utf-8", errors="surrogateescape", newline="") as fh:
            header = next(csv.reader(fh), [])
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    except csv.Error:  # the fast reader or the record reader says what is wrong
        return []
    return [h.removeprefix("\ufeff") for h in header]


def _read_csv_by_record(path: Path) -> pl.DataFrame:
    """The slow, forgiving reader: one row per CSV record, bad records kept with the reason."""
    records: list[dict[str, str | int | None]] = []
    with path.open("r", encoding="utf-8", errors="surrogateescape", newline="") as fh:
        reader = csv.reader(fh)
        header = next(reader, None)
        if header is None:
            return pl.DataFrame({SOURCE_ROW: pl.Series([], dtype=pl.Int64)})
        header = [h.removeprefix("\ufeff") for h in header]
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


def _json_texts(obj: dict[str, object]) -> dict[str, str | None]:
    """Each value of a record as its JSON text, or the record's parse error for a list nested
    deeper than JSON is written here (orjson's limit): a reject, not a crash."""
    values: dict[str, str | None] = {}
    for key, value in obj.items():
        try:
            values[key] = _json_text(value)
        except orjson.JSONEncodeError as exc:
            return {PARSE_ERROR: f"{key}: nested too deeply ({exc})"}
    return values


def read_ndjson(path: Path, list_columns: frozenset[str]) -> pl.DataFrame:
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
                            record.update(_json_texts(obj))
                records.append(record)
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror}") from exc
    return _frame(records)


def read_file(path: Path, table: Table, source: str) -> pl.DataFrame:
    """A CSV, NDJSON or API dump file's rows as text columns plus `_source_row` (and
    `_source_file` when a converted format splits one file into several sources). Parquet
    files go to DuckDB directly (`pipeline.ingest.parquet`)."""
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
    return read_ndjson(path, lists)
