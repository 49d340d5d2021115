"""Where records end, in bounded memory: a text stream's lines of at most MAX_RECORD_BYTES
(a longer one read past in pieces, never held), the lines of one CSV record for the csv module
with its size checked against the limit, and where polars' batches of CSV text may be cut."""

from __future__ import annotations

import io
from collections.abc import Iterator

import numpy as np

from pipeline.ingest.raw import MAX_RECORD_BYTES

_READ = 1 << 20  # bytes read at a time past a line over the limit
_QUOTE = ord('"')


class TooLong(Exception):
    """The record being read is longer than MAX_RECORD_BYTES."""


def bounded_lines(fh: io.BufferedReader, eol: bytes) -> Iterator[bytes | int]:
    """The stream's lines, each with its end (`eol`), of at most MAX_RECORD_BYTES bytes; a
    longer line is read past in pieces, never held, and given as the count of its quote
    characters (an int), for the reader to skip the rest of its record."""
    if eol != b"\n":
        yield from _lines_ending(fh, eol)
        return
    while line := fh.readline(MAX_RECORD_BYTES + 1):
        if len(line) <= MAX_RECORD_BYTES:
            yield line
            continue
        quotes = line.count(b'"')
        while not line.endswith(b"\n") and (line := fh.readline(_READ)):
            quotes += line.count(b'"')
        yield quotes


def _lines_ending(fh: io.BufferedReader, eol: bytes) -> Iterator[bytes | int]:
    """`bounded_lines` for lines that end with another byte than LF (CR alone)."""
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


class RecordLines:
    """The lines of a CSV file as csv.reader reads them (text, bytes that are not UTF-8 as
    surrogates), raising TooLong once the record being read passes MAX_RECORD_BYTES; then
    `skip_record` reads past the rest of it: the lines up to where its quotes close."""

    def __init__(self, lines: Iterator[bytes | int]) -> None:
        self.lines = lines
        self.size = 0
        self.quotes = 0

    def start(self) -> None:
        """A record begins."""
        self.size = self.quotes = 0

    def __iter__(self) -> RecordLines:
        return self

    def __next__(self) -> str:
        line = next(self.lines)
        if isinstance(line, int):
            self.quotes += line
            raise TooLong
        self.size += len(line)
        self.quotes += line.count(b'"')
        if self.size > MAX_RECORD_BYTES:
            raise TooLong
        return line.decode("utf-8", "surrogateescape")

    def skip_record(self) -> None:
        while self.quotes % 2:
            line = next(self.lines, None)
            if line is None:
                return
            self.quotes += line if isinstance(line, int) else line.count(b'"')


def record_ends(text: bytes, eol: bytes, *, at_end: bool, records: int) -> tuple[int, int]:
    """Where the last whole record of `text` ends, of its first `records` (0: none yet; all of
    `text` is whole at the end of the file), and the length of the longest record up to there,
    with an unfinished one after it. A record ends at an end of line with an even number of
    quote characters before it (RFC 4180 doubles a quote inside quotes)."""
    codes = np.frombuffer(text, dtype=np.uint8)
    ends = np.flatnonzero(codes == eol[0])
    if ends.size and b'"' in text:
        quotes = np.flatnonzero(codes == _QUOTE)
        ends = ends[np.searchsorted(quotes, ends) % 2 == 0]  # an even number before it
    if ends.size >= records and not (at_end and ends.size == records):
        ends = ends[:records]
        limit = int(ends[-1]) + 1  # more records follow: the next batch looks at them
    else:
        limit = len(text)  # the unfinished record counts too
    cut = len(text) if at_end and limit == len(text) else (int(ends[-1]) + 1 if ends.size else 0)
    bounds = np.concatenate(([0], ends[ends < limit - 1] + 1, [limit]))
    return cut, int(np.diff(bounds).max()) if bounds.size > 1 else 0
