"""Text formats: CSV and NDJSON files (and, through `adapters`, Seller Portal exports and
catalog API dumps) read as the text that was written, one row per record, with its row number;
a record that cannot be read is kept with the reason, to become a reject."""

from __future__ import annotations

import csv
import itertools
import sys

import orjson
import polars as pl

from pipeline.contract import Kind, Table
from pipeline.errors import InputError
from pipeline.ingest.adapters import (
    AdapterError,
    from_seller_portal,
    is_seller_portal,
    read_api_dump,
)
from pipeline.ingest.files import InputFile, open_binary, open_text
from pipeline.ingest.raw import (
    PARSE_ERROR,
    RESERVED,
    SOURCE_ROW,
    check_names,
    json_text,
    text_frame,
)

MAX_FIELD = 1 << 20  # characters; a longer CSV field makes its record a reject
csv.field_size_limit(sys.maxsize)  # the csv module's own limit: MAX_FIELD is checked instead


def _read_csv(file: InputFile, max_columns: int) -> pl.DataFrame:
    """polars' fast reader; a file it refuses (a record with more fields than the header,
    bytes that are not UTF-8, ...) is read again record by record, keeping the bad records as
    rows with a parse error. A record with fewer fields than the header reads its missing
    trailing cells as empty (spreadsheet exports drop trailing empty cells). Records end with
    LF, CRLF, or CR alone (old Mac exports), as the header's end says."""
    header, eol = _header(file)
    check_names(file.path, header, max_columns)  # before reading: no reason to retry
    try:
        frame = pl.read_csv(
            file.path,  # gzip and zstd are decompressed by polars, in memory
            infer_schema=False,
            row_index_name=SOURCE_ROW,
            row_index_offset=1,
            encoding="utf8",
            eol_char=eol,
        )
    except pl.exceptions.NoDataError:
        return pl.DataFrame({SOURCE_ROW: pl.Series([], dtype=pl.UInt32)})
    except OSError as exc:
        raise InputError(f"{file.path}: cannot read: {exc.strerror or exc}") from exc
    except pl.exceptions.PolarsError:  # a malformed record or bytes: read record by record
        return _read_csv_by_record(file, max_columns)
    data = [c for c in frame.columns if c != SOURCE_ROW]
    # polars reads a blank line and a record of empty cells alike, as a row of nulls: the
    # record reader tells them apart (a blank line is no record; `,,,` is a bad one).
    if data and frame.select(pl.all_horizontal(pl.col(data).is_null()).any()).item():
        return _read_csv_by_record(file, max_columns)
    return frame


def _header(file: InputFile) -> tuple[list[str], str]:
    """The column names of a CSV file's first record (none for an empty file), and the
    character that ends its records: CR when the first line ends with CR alone, else LF (which
    reads CRLF too). Read as one line, CR-only records would be one header of every field in
    the file."""
    try:
        with open_text(file) as fh:
            first = fh.readline()  # lines end at LF, CRLF or CR, untranslated
            header = next(csv.reader(itertools.chain([first], fh)), [])
    except OSError as exc:
        raise InputError(f"{file.path}: cannot read: {exc.strerror or exc}") from exc
    except csv.Error:  # the fast reader or the record reader says what is wrong
        return [], "\n"
    eol = "\r" if first.endswith("\r") else "\n"
    return [h.removeprefix("\ufeff") for h in header], eol


def _read_csv_by_record(file: InputFile, max_columns: int) -> pl.DataFrame:
    """The slow, forgiving reader: one row per CSV record, bad records kept with the reason."""
    records: list[dict[str, str | int | None]] = []
    try:
        with open_text(file) as fh:
            reader = csv.reader(fh)
            header = next(reader, None)
            if header is None:
                return pl.DataFrame({SOURCE_ROW: pl.Series([], dtype=pl.Int64)})
            header = [h.removeprefix("\ufeff") for h in header]
            if _has_bad_bytes(header):
                raise InputError(f"{file.path}: the header is not valid UTF-8")
            row = 0
            for fields in reader:
                row += 1
                if not fields:
                    continue  # a blank line is no record, but counts, as in the fast reader
                records.append(_record(row, fields, header))
    except OSError as exc:  # a compressed file that ends early or is damaged
        raise InputError(f"{file.path}: cannot read: {exc.strerror or exc}") from exc
    return text_frame(records, header, path=file.path, max_columns=max_columns)


def _record(row: int, fields: list[str], header: list[str]) -> dict[str, str | int | None]:
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
    return record


def _has_bad_bytes(fields: list[str]) -> bool:
    return any("\udc80" <= c <= "\udcff" for f in fields for c in f)


def _json_texts(obj: dict[str, object]) -> dict[str, str | None]:
    """Each value of a record as its JSON text, or the record's parse error for a list nested
    deeper than JSON is written here (orjson's limit): a reject, not a crash."""
    values: dict[str, str | None] = {}
    for key, value in obj.items():
        try:
            values[key] = json_text(value)
        except orjson.JSONEncodeError as exc:
            return {PARSE_ERROR: f"{key}: nested too deeply ({exc})"}
    return values


def read_ndjson(file: InputFile, list_columns: frozenset[str], max_columns: int) -> pl.DataFrame:
    """One row per non-blank line; a line that is not a JSON object, or that has an object or
    an array where a scalar belongs, is kept with a parse error."""
    records: list[dict[str, str | int | None]] = []
    try:
        with open_binary(file) as fh:
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
    except OSError as exc:  # unreadable, or a compressed file that ends early or is damaged
        raise InputError(f"{file.path}: cannot read: {exc.strerror or exc}") from exc
    return text_frame(records, path=file.path, max_columns=max_columns)


def read_file(file: InputFile, table: Table, source: str, max_columns: int) -> pl.DataFrame:
    """A CSV, NDJSON or API dump file's rows as text columns plus `_source_row` (and
    `_source_file` when a converted format splits one file into several sources), at most
    `max_columns` of them. Parquet files go to DuckDB directly (`pipeline.ingest.parquet`)."""
    try:
        if file.format == "json":
            return read_api_dump(file.path, table.name, max_columns)
        if file.format == "csv":
            frame = _read_csv(file, max_columns)
            if table.name == "listings" and is_seller_portal(frame.columns):
                return from_seller_portal(frame, file.stem, source)
            return frame
    except AdapterError as exc:
        raise InputError(f"{file.path}: {exc}") from exc
    lists = frozenset(c.name for c in table.columns if c.kind is Kind.TEXT_LIST)
    return read_ndjson(file, lists, max_columns)
