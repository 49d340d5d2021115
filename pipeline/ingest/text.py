"""Text formats: CSV and NDJSON files (and, through `adapters`, Seller Portal exports and
catalog API dumps) read as the text that was written, one row per record, with its row number;
a record that cannot be read is kept with the reason, to become a reject."""

from __future__ import annotations

import csv
import sys
from collections.abc import Iterator

import orjson
import polars as pl

from pipeline.contract import Table
from pipeline.errors import InputError
from pipeline.ingest.adapters import (
    AdapterError,
    from_seller_portal,
    is_seller_portal,
    read_api_dump,
)
from pipeline.ingest.files import InputFile, open_binary
from pipeline.ingest.raw import (
    BATCH_BYTES,
    BATCH_CELLS,
    MAX_RECORD_BYTES,
    PARSE_ERROR,
    RESERVED,
    SOURCE_ROW,
    TOO_LONG,
    check_names,
    check_width,
    json_values,
    scalar_columns,
    text_frame,
)
from pipeline.ingest.records import RecordLines, TooLong, bounded_lines, record_ends

csv.field_size_limit(sys.maxsize)  # the csv module's own limit: MAX_RECORD_BYTES bounds a record


class _Reread(Exception):
    """The fast reader cannot read the file as it is: the record reader reads it."""


# A frame of rows to append, or None: forget the rows of this file given so far (the fast
# reader gave up, and the record reader reads the file again from its start).
Frames = Iterator[pl.DataFrame | None]


def _read_csv(file: InputFile, max_columns: int) -> Frames:
    """polars' fast reader a batch at a time; a file it refuses is read again record by record,
    keeping bad records as rows with a parse error."""
    header, eol = _header(file)
    check_names(file.path, header, max_columns)  # before reading: no reason to retry
    given = False
    try:
        for frame in _read_csv_fast(file, eol, len(header)):
            given = True
            yield frame
        return
    except OSError as exc:
        raise InputError(f"{file.path}: cannot read: {exc.strerror or exc}") from exc
    except (_Reread, pl.exceptions.PolarsError):  # a malformed record or bytes
        pass
    if given:
        yield None
    yield from _read_csv_by_record(file, max_columns, eol)


def _read_csv_fast(file: InputFile, eol: bytes, columns: int) -> Iterator[pl.DataFrame]:
    """The file's records by polars, in batches of at most BATCH_BYTES of text and BATCH_CELLS
    cells, each cut at the end of a record (`record_ends`) and parsed with the header before
    it; raises _Reread for a file the record reader must read (a cut inside quotes that a
    stray quote hid fails in polars, and so goes there too)."""
    per_batch = max(1, BATCH_CELLS // max(1, columns))
    header = text = b""
    rows = 0
    with open_binary(file) as fh:
        at_end = False
        while not at_end:
            data = fh.read(BATCH_BYTES)
            at_end = not data
            text = text + data if text else data
            if not header:  # the first record, given again before every batch
                cut = record_ends(text, eol, at_end=False, records=1)[0]
                if not cut and not at_end:
                    raise _Reread  # its quotes never close: the record reader says why
                header, text = text[: cut or len(text)], text[cut or len(text) :]
            while True:
                cut, longest = record_ends(text, eol, at_end=at_end, records=per_batch)
                if longest > MAX_RECORD_BYTES:
                    raise _Reread  # the record reader rejects it, reading it in pieces
                if not cut:
                    break
                frame = _parse_csv(header + text[:cut], eol)
                text = text[cut:]
                yield frame.with_columns(pl.col(SOURCE_ROW) + rows)
                rows += frame.height
    if not rows:  # no record: the header's columns (none for an empty file)
        yield _parse_csv(header, eol)


def _parse_csv(text: bytes, eol: bytes) -> pl.DataFrame:
    try:
        frame = pl.read_csv(
            text,
            infer_schema=False,
            row_index_name=SOURCE_ROW,
            row_index_offset=1,
            encoding="utf8",
            eol_char=eol.decode(),
        )
    except pl.exceptions.NoDataError:  # an empty file
        return pl.DataFrame({SOURCE_ROW: pl.Series([], dtype=pl.Int64)})
    data = [c for c in frame.columns if c != SOURCE_ROW]
    # polars reads a blank line and a record of empty cells alike, as a row of nulls: the
    # record reader tells them apart (a blank line is no record; `,,,` is a bad one).
    if data and frame.select(pl.all_horizontal(pl.col(data).is_null()).any()).item():
        raise _Reread
    return frame.with_columns(pl.col(SOURCE_ROW).cast(pl.Int64))


def _header(file: InputFile) -> tuple[list[str], bytes]:
    """The column names of a CSV file's first record (none for an empty file), and the
    character that ends its records: CR when the first line ends with CR alone, else LF (which
    reads CRLF too). Read as one line, CR-only records would be one header of every field in
    the file. A header longer than MAX_RECORD_BYTES stops the build."""
    try:
        with open_binary(file) as fh:
            start = fh.read(MAX_RECORD_BYTES + 1)
        ends = [i for i in (start.find(b"\r"), start.find(b"\n")) if i >= 0]
        first = min(ends, default=-1)
        cr = first >= 0 and start[first] == ord("\r") and start[first + 1 : first + 2] != b"\n"
        eol = b"\r" if cr else b"\n"
        with open_binary(file) as fh:
            header = next(csv.reader(RecordLines(bounded_lines(fh, eol))), [])
    except OSError as exc:
        raise InputError(f"{file.path}: cannot read: {exc.strerror or exc}") from exc
    except TooLong:
        raise InputError(f"{file.path}: header: {TOO_LONG}") from None
    except csv.Error:  # the fast reader or the record reader says what is wrong
        return [], b"\n"
    return header, eol


def _read_csv_by_record(file: InputFile, max_columns: int, eol: bytes) -> Frames:
    """The slow, forgiving reader: one row per CSV record, bad records kept with the reason, a
    batch of records at a time."""
    records: list[dict[str, str | int | None]] = []
    size = cells = 0
    try:
        with open_binary(file) as fh:
            lines = RecordLines(bounded_lines(fh, eol))
            reader = csv.reader(lines)
            header = next(reader, None)
            if header is None:
                yield pl.DataFrame({SOURCE_ROW: pl.Series([], dtype=pl.Int64)})
                return
            if _has_bad_bytes(header):
                raise InputError(f"{file.path}: the header is not valid UTF-8")
            row = 0
            while True:
                lines.start()
                try:
                    fields = next(reader)
                except StopIteration:
                    break
                except (TooLong, csv.Error) as exc:
                    lines.skip_record()
                    row += 1
                    reason = TOO_LONG if isinstance(exc, TooLong) else str(exc)
                    records.append({SOURCE_ROW: row, PARSE_ERROR: reason})
                    continue
                row += 1
                if not fields:
                    continue  # a blank line is no record, but counts, as in the fast reader
                records.append(_record(row, fields, header))
                size += lines.size
                cells += len(fields)
                if cells >= BATCH_CELLS or size >= BATCH_BYTES:
                    yield text_frame(records, header, path=file.path, max_columns=max_columns)
                    records, size, cells = [], 0, 0
    except OSError as exc:  # a compressed file that ends early or is damaged
        raise InputError(f"{file.path}: cannot read: {exc.strerror or exc}") from exc
    yield text_frame(records, header, path=file.path, max_columns=max_columns)


def _record(row: int, fields: list[str], header: list[str]) -> dict[str, str | int | None]:
    record: dict[str, str | int | None] = {SOURCE_ROW: row}
    if _has_bad_bytes(fields):
        record[PARSE_ERROR] = "not valid UTF-8"
    elif len(fields) > len(header):
        record[PARSE_ERROR] = f"{len(fields)} fields, the header has {len(header)}"
    else:
        cells = zip(header, fields, strict=False)  # missing trailing cells stay null
        record.update((h, v if v != "" else None) for h, v in cells)
    return record


def _has_bad_bytes(fields: list[str]) -> bool:
    return any("\udc80" <= c <= "\udcff" for f in fields for c in f)


def read_ndjson(file: InputFile, scalars: frozenset[str], max_columns: int) -> Frames:
    """One row per non-blank line, a batch of lines at a time; a line that is not a JSON
    object, that has an object or an array in a declared column that holds a value
    (`scalars`), or that is longer than MAX_RECORD_BYTES (read past in pieces) is kept with a
    parse error. An object or array elsewhere (a nested column, an extra one) is its JSON
    text."""
    records: list[dict[str, str | int | None]] = []
    columns: set[str] = set()
    size = cells = 0
    try:
        with open_binary(file) as fh:
            for line_no, line in enumerate(bounded_lines(fh, b"\n"), start=1):
                if isinstance(line, int):
                    records.append({SOURCE_ROW: line_no, PARSE_ERROR: TOO_LONG})
                    continue
                if not line.strip():
                    continue
                records.append(_ndjson_record(line_no, line, scalars))
                size += len(line)
                cells += len(records[-1])
                if cells >= BATCH_CELLS or size >= BATCH_BYTES:
                    yield _ndjson_frame(records, columns, file, max_columns)
                    records, size, cells = [], 0, 0
    except OSError as exc:  # unreadable, or a compressed file that ends early or is damaged
        raise InputError(f"{file.path}: cannot read: {exc.strerror or exc}") from exc
    yield _ndjson_frame(records, columns, file, max_columns)


def _ndjson_frame(
    records: list[dict[str, str | int | None]], columns: set[str], file: InputFile, width: int
) -> pl.DataFrame:
    """A batch of NDJSON records as a frame; `columns`, the keys of the file's batches so far,
    counts the file's width against `width` (max_columns)."""
    columns.update(k for r in records for k in r if k not in RESERVED)
    check_width(file.path, len(columns), width)
    return text_frame(records, path=file.path, max_columns=width)


def _ndjson_record(
    line_no: int, line: bytes, scalars: frozenset[str]
) -> dict[str, str | int | None]:
    record: dict[str, str | int | None] = {SOURCE_ROW: line_no}
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        record[PARSE_ERROR] = f"not valid JSON: {exc}"
        return record
    if not isinstance(obj, dict):
        record[PARSE_ERROR] = "not a JSON object"
    elif any(k in RESERVED for k in obj):
        record[PARSE_ERROR] = "uses a reserved key (_source_file, ...)"
    else:
        record.update(json_values(obj, scalars))
    return record


def read_file(file: InputFile, table: Table, source: str, max_columns: int) -> Frames:
    """A CSV, NDJSON or API dump file's rows as text columns plus `_source_row` (and
    `_source_file` when a converted format splits one file into several sources), at most
    `max_columns` of them, a batch at a time (`Frames`: None means the rows given so far are
    to be forgotten, the file being read again). Parquet files go to DuckDB directly
    (`pipeline.ingest.parquet`)."""
    if file.format == "json":
        try:
            yield read_api_dump(file.path, table, max_columns)
        except AdapterError as exc:
            raise InputError(f"{file.path}: {exc}") from exc
        return
    if file.format == "csv":
        for frame in _read_csv(file, max_columns):
            if frame is not None and table.name == "listings" and is_seller_portal(frame.columns):
                try:
                    frame = from_seller_portal(frame, file.stem, source)
                except AdapterError as exc:
                    raise InputError(f"{file.path}: {exc}") from exc
            yield frame
        return
    yield from read_ndjson(file, scalar_columns(table), max_columns)
