"""Text formats: CSV and NDJSON files (and, through `adapters`, Seller Portal exports and
catalog API dumps) read as the text that was written, one row per record, with its row number;
a record that cannot be read is kept with the reason, to become a reject."""

from __future__ import annotations

import csv
import io
import sys
from collections.abc import Iterator

import numpy as np
import orjson
import polars as pl

from pipeline.contract import Kind, Table
from pipeline.errors import InputError
from pipeline.ingest import adapters
from pipeline.ingest.files import InputFile, open_binary
from pipeline.ingest.raw import (
    BATCH_BYTES,
    MAX_RECORD_BYTES,
    PARSE_ERROR,
    RESERVED,
    SOURCE_ROW,
    check_names,
    check_width,
    text_frame,
)

csv.field_size_limit(sys.maxsize)  # the csv module's own limit: MAX_RECORD_BYTES bounds a record
_READ = 1 << 20  # bytes read at a time by the record-by-record readers
_BATCH_RECORDS = 100_000  # records of the record-by-record readers appended at a time
_QUOTE = ord('"')
TOO_LONG = f"longer than {MAX_RECORD_BYTES:,} bytes (a record or a field over 1 MiB)"


class _Reread(Exception):
    """The fast reader cannot read the file as it is: the record reader reads it."""


class _TooLong(Exception):
    """The record being read is longer than MAX_RECORD_BYTES."""


# A frame of rows to append, or None: forget the rows of this file given so far (the fast
# reader gave up, and the record reader reads the file again from its start).
Frames = Iterator[pl.DataFrame | None]


def _lines(fh: io.BufferedReader, eol: bytes) -> Iterator[bytes | int]:
    """The stream's lines, each with its end (`eol`), of at most MAX_RECORD_BYTES bytes; a
    longer line is read past in pieces, never held, and given as the count of its quote
    characters (an int), for the reader to skip the rest of its record."""
    pending = b""  # the start of the current line, at most MAX_RECORD_BYTES
    quotes = -1  # while reading past a long line: its quotes so far
    while chunk := fh.read(_READ):
        start = 0
        while (end := chunk.find(eol, start)) >= 0:
            piece = chunk[start : end + 1]
            start = end + 1
            if quotes >= 0:
                yield quotes + piece.count(b'"')
                quotes = -1
            elif len(pending) + len(piece) > MAX_RECORD_BYTES:
                yield pending.count(b'"') + piece.count(b'"')
                pending = b""
            else:
                yield pending + piece
                pending = b""
        rest = chunk[start:]
        if quotes >= 0:
            quotes += rest.count(b'"')
        elif len(pending) + len(rest) > MAX_RECORD_BYTES:
            quotes = pending.count(b'"') + rest.count(b'"')
            pending = b""
        else:
            pending += rest
    if quotes >= 0:
        yield quotes
    elif pending:
        yield pending


class _RecordLines:
    """The lines of a CSV file as csv.reader reads them (text, bytes that are not UTF-8 as
    surrogates), raising _TooLong once the record being read passes MAX_RECORD_BYTES; then
    `skip_record` reads past the rest of it: the lines up to where its quotes close."""

    def __init__(self, lines: Iterator[bytes | int]) -> None:
        self.lines = lines
        self.size = 0
        self.quotes = 0

    def start(self) -> None:
        """A record begins."""
        self.size = self.quotes = 0

    def __iter__(self) -> _RecordLines:
        return self

    def __next__(self) -> str:
        line = next(self.lines)
        if isinstance(line, int):
            self.quotes += line
            raise _TooLong
        self.size += len(line)
        self.quotes += line.count(b'"')
        if self.size > MAX_RECORD_BYTES:
            raise _TooLong
        return line.decode("utf-8", "surrogateescape")

    def skip_record(self) -> None:
        while self.quotes % 2:
            line = next(self.lines, None)
            if line is None:
                return
            self.quotes += line if isinstance(line, int) else line.count(b'"')


def _read_csv(file: InputFile, max_columns: int) -> Frames:
    """polars' fast reader, a batch of records at a time (`_read_csv_fast`); a file it refuses
    (a record with more fields than the header, bytes that are not UTF-8, a record over
    MAX_RECORD_BYTES, ...) is read again record by record, keeping the bad records as rows
    with a parse error. A record with fewer fields than the header reads its missing trailing
    cells as empty (spreadsheet exports drop trailing empty cells). Records end with LF, CRLF,
    or CR alone (old Mac exports), as the header's end says."""
    header, eol = _header(file)
    check_names(file.path, header, max_columns)  # before reading: no reason to retry
    given = False
    try:
        for frame in _read_csv_fast(file, eol):
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


def _read_csv_fast(file: InputFile, eol: bytes) -> Iterator[pl.DataFrame]:
    """The file's records by polars, BATCH_BYTES of text at a time, each batch cut at the end
    of a record (an end of line outside quotes) and parsed with the header before it; raises
    _Reread for a file the record reader must read. Every batch that polars parses has its
    quotes closed where it was cut: a cut inside quotes that an odd quote elsewhere hid fails
    there, and the record reader reads the file."""
    header = b""
    rows = 0
    tail = b""
    with open_binary(file) as fh:
        while True:
            data = fh.read(BATCH_BYTES)
            text = tail + data if tail else data
            if not text:
                break
            cut, longest = _record_ends(text, eol[0], at_end=not data)
            if longest > MAX_RECORD_BYTES:
                raise _Reread  # the record reader rejects it, reading it in pieces
            tail = text[cut:]
            if not header:  # the first record is the header, given again with every batch
                header = text[: _record_ends(text, eol[0], at_end=True, first=True)[0]]
                text = text[len(header) : cut]
            else:
                text = text[:cut]
            if not text and rows:
                continue
            frame = _parse_csv(header + text, eol)
            rows += frame.height
            yield frame.with_columns(pl.col(SOURCE_ROW) + (rows - frame.height))
    if not header:  # an empty file
        yield pl.DataFrame({SOURCE_ROW: pl.Series([], dtype=pl.Int64)})


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
    except pl.exceptions.NoDataError:
        return pl.DataFrame({SOURCE_ROW: pl.Series([], dtype=pl.Int64)})
    data = [c for c in frame.columns if c != SOURCE_ROW]
    # polars reads a blank line and a record of empty cells alike, as a row of nulls: the
    # record reader tells them apart (a blank line is no record; `,,,` is a bad one).
    if data and frame.select(pl.all_horizontal(pl.col(data).is_null()).any()).item():
        raise _Reread
    return frame.with_columns(pl.col(SOURCE_ROW).cast(pl.Int64))


def _record_ends(text: bytes, eol: int, *, at_end: bool, first: bool = False) -> tuple[int, int]:
    """Where the last whole record of `text` ends (0: none yet; the first's end if `first`),
    and the length of its longest record, the unfinished one after the cut included. A record
    ends at an end of line with an even number of quote characters before it (RFC 4180
    doubles a quote inside quotes); all of `text` is whole at the end of the file."""
    codes = np.frombuffer(text, dtype=np.uint8)
    ends = np.flatnonzero(codes == eol)
    if ends.size and text.find(b'"') >= 0:
        quotes = np.flatnonzero(codes == _QUOTE)
        ends = ends[np.searchsorted(quotes, ends) % 2 == 0]  # an even number before it
    if first:
        return (int(ends[0]) + 1 if ends.size else len(text)), 0
    cut = int(ends[-1]) + 1 if ends.size else 0
    if at_end:
        cut = len(text)
    starts = np.concatenate(([0], ends + 1))
    lengths = np.diff(np.concatenate((starts, [len(text)])))
    return cut, int(lengths.max()) if lengths.size else 0


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
            header = next(csv.reader(_RecordLines(_lines(fh, eol))), [])
    except OSError as exc:
        raise InputError(f"{file.path}: cannot read: {exc.strerror or exc}") from exc
    except _TooLong:
        raise InputError(f"{file.path}: header: {TOO_LONG}") from None
    except csv.Error:  # the fast reader or the record reader says what is wrong
        return [], b"\n"
    return header, eol


def _read_csv_by_record(file: InputFile, max_columns: int, eol: bytes) -> Frames:
    """The slow, forgiving reader: one row per CSV record, bad records kept with the reason, a
    batch of records at a time."""
    records: list[dict[str, str | int | None]] = []
    size = 0
    try:
        with open_binary(file) as fh:
            lines = _RecordLines(_lines(fh, eol))
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
                except (_TooLong, csv.Error) as exc:
                    lines.skip_record()
                    row += 1
                    reason = TOO_LONG if isinstance(exc, _TooLong) else str(exc)
                    records.append({SOURCE_ROW: row, PARSE_ERROR: reason})
                    continue
                row += 1
                if not fields:
                    continue  # a blank line is no record, but counts, as in the fast reader
                records.append(_record(row, fields, header))
                size += lines.size
                if len(records) >= _BATCH_RECORDS or size >= BATCH_BYTES:
                    yield text_frame(records, header, path=file.path, max_columns=max_columns)
                    records, size = [], 0
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


def read_ndjson(file: InputFile, list_columns: frozenset[str], max_columns: int) -> Frames:
    """One row per non-blank line, a batch of lines at a time; a line that is not a JSON
    object, that has an object or an array where a scalar belongs, or that is longer than
    MAX_RECORD_BYTES (read past in pieces) is kept with a parse error."""
    records: list[dict[str, str | int | None]] = []
    columns: set[str] = set()
    size = 0
    try:
        with open_binary(file) as fh:
            for line_no, line in enumerate(_lines(fh, b"\n"), start=1):
                if isinstance(line, int):
                    records.append({SOURCE_ROW: line_no, PARSE_ERROR: TOO_LONG})
                    continue
                if not line.strip():
                    continue
                records.append(_ndjson_record(line_no, line, list_columns))
                size += len(line)
                if len(records) >= _BATCH_RECORDS or size >= BATCH_BYTES:
                    yield _ndjson_frame(records, columns, file, max_columns)
                    records, size = [], 0
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
    line_no: int, line: bytes, list_columns: frozenset[str]
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
        nested = [k for k, v in obj.items() if isinstance(v, dict | list) and k not in list_columns]
        if nested:
            record[PARSE_ERROR] = f"{nested[0]}: a JSON object or array, not a value"
        else:
            record.update(_json_texts(obj))
    return record


def read_file(file: InputFile, table: Table, source: str, max_columns: int) -> Frames:
    """A CSV, NDJSON or API dump file's rows as text columns plus `_source_row` (and
    `_source_file` when a converted format splits one file into several sources), at most
    `max_columns` of them, a batch at a time (`Frames`: None means the rows given so far are
    to be forgotten, the file being read again). Parquet files go to DuckDB directly
    (`pipeline.ingest.parquet`)."""
    if file.format == "json":
        try:
            yield adapters.read_api_dump(file.path, table.name, max_columns)
        except adapters.AdapterError as exc:
            raise InputError(f"{file.path}: {exc}") from exc
        return
    if file.format == "csv":
        for frame in _read_csv(file, max_columns):
            if (
                frame is not None
                and table.name == "listings"
                and adapters.is_seller_portal(frame.columns)
            ):
                try:
                    frame = adapters.from_seller_portal(frame, file.stem, source)
                except adapters.AdapterError as exc:
                    raise InputError(f"{file.path}: {exc}") from exc
            yield frame
        return
    lists = frozenset(c.name for c in table.columns if c.kind is Kind.TEXT_LIST)
    yield from read_ndjson(file, lists, max_columns)
