"""An input in an object store (`--input s3://bucket/prefix`): listed once, taken by the rules
of a local input directory (`files`), read by downloading each object.
(docs/operating.md, "Input files")"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb
import obstore as obs

from pipeline.contract import TABLES, Table
from pipeline.errors import BuildError, InputError, first_line
from pipeline.ingest.files import (
    InputFile,
    changed,
    check_entry,
    checked_kind,
    missing,
    signature,
)
from pipeline.ingest.parquet import parquet_columns, typed_columns
from pipeline.remote import FAILURES, SCHEMES, open_bucket

if TYPE_CHECKING:
    from obstore import GetOptions
    from obstore.store import ObjectStore

CHUNK_BYTES = 8 << 20  # a download is written to disk in pieces of about this size
DOWNLOADS = 8  # objects the driver downloads at once: their requests' latency overlaps
_PARQUET_MAGIC = b"PAR1"


@dataclass(frozen=True, order=True)
class RemoteFile:
    """One object of a table, as listed: what a task needs to read it on any machine (the
    input's URL, its key under it, its ETag and size, format and compression), and nothing of
    the driver's disk."""

    key: str  # relative to the input's prefix, `/`-separated: also its source name
    url: str = field(compare=False)
    e_tag: str | None = field(compare=False)
    size: int = field(compare=False)
    format: str = field(compare=False)
    compression: str | None = field(compare=False)

    @property
    def name(self) -> str:
        """The object's URL, which messages name."""
        return f"{self.url}/{self.key}"

    def download(self, root: Path, store: ObjectStore | None = None) -> InputFile:
        """The object as a file under `root` (at its key), if it is still the one listed."""
        target = root / self.key
        target.parent.mkdir(parents=True, exist_ok=True)
        got = self._get(store, {})
        try:
            with target.open("wb") as fh:
                for chunk in got.stream(min_chunk_size=CHUNK_BYTES):
                    fh.write(chunk)
        except FAILURES as exc:
            raise InputError(f"{self.name}: cannot read: {first_line(exc)}") from None
        st = target.stat()
        if st.st_size != self.size:
            raise changed(self.name, f"{st.st_size:,} bytes, listed with {self.size:,}")
        return InputFile(target, self.format, self.compression, signature(st))

    def footer(self, root: Path, store: ObjectStore | None = None) -> Path:
        """A Parquet object's schema, read without its rows: a file under `root` holding its
        footer only (the magic, then the footer and its length, as the object ends), which
        Parquet readers take for the file when they read no rows. An object too short, or not
        Parquet at its end, is downloaded whole, for the reader to say what is wrong with it."""
        if self.size >= 12:
            tail = self._bytes(store, {"range": {"suffix": 8}})
            length = int.from_bytes(tail[:4], "little")
            if tail[4:] == _PARQUET_MAGIC and length + 12 <= self.size:
                target = root / self.key
                target.parent.mkdir(parents=True, exist_ok=True)
                footer = self._bytes(store, {"range": (self.size - 8 - length, self.size)})
                target.write_bytes(_PARQUET_MAGIC + footer)
                return target
        return self.download(root, store).path

    def _bytes(self, store: ObjectStore | None, options: GetOptions) -> bytes:
        try:
            return bytes(self._get(store, options).bytes())
        except FAILURES as exc:
            raise InputError(f"{self.name}: cannot read: {first_line(exc)}") from None

    def _get(self, store: ObjectStore | None, options: GetOptions) -> obs.GetResult:
        """A GET of the object as listed (`If-Match` on its ETag)."""
        if self.e_tag is not None:
            options = {**options, "if_match": self.e_tag}
        try:
            return obs.get(store or open_bucket(self.url), self.key, options=options)
        except obs.exceptions.PreconditionError:
            raise changed(self.name, "its ETag is no longer the one listed") from None
        except (FileNotFoundError, obs.exceptions.NotFoundError):
            raise InputError(f"{self.name}: cannot read: vanished since it was listed") from None
        except FAILURES as exc:
            raise InputError(f"{self.name}: cannot read: {first_line(exc)}") from None


@dataclass(frozen=True)
class RemoteInput:
    """An input prefix's tables' objects, as listed once: table name -> its files, sorted as a
    directory's are."""

    url: str
    tables: dict[str, list[RemoteFile]]

    def files(self, table: Table) -> list[RemoteFile]:
        """The table's objects; none is an error for a required table."""
        files = self.tables[table.name]
        if not files and not table.optional:
            raise missing(f"{self.url}/{table.group}/{table.name}", table)
        return files


def input_url(url: str) -> str:
    """The input URL without its trailing slash, or an InputError saying why it is none."""
    if url.partition("://")[0] not in SCHEMES:
        raise InputError(
            f"{url}: neither an input directory nor an object-store URL "
            f"({', '.join(f'{s}://' for s in SCHEMES)})"
        )
    try:
        open_bucket(url)  # the URL rules (check_url) and the store's settings
    except BuildError as exc:
        raise InputError(str(exc)) from None
    return url.rstrip("/")


def list_input(url: str, tables: Sequence[Table] = TABLES) -> RemoteInput:
    """The input at `url`: one LIST of each tables' folder, every key placed or refused."""
    url = input_url(url)
    store = open_bucket(url)
    found: dict[str, list[RemoteFile]] = {t.name: [] for t in tables}
    for group in sorted({t.group for t in tables}):
        try:
            listed = [m for batch in obs.list(store, prefix=f"{group}/") for m in batch]
        except FAILURES as exc:
            raise InputError(f"{url}/{group}/: cannot list: {first_line(exc)}") from None
        for meta in listed:
            placed = _place(url, meta["path"], meta["size"], group, tables)
            if placed is not None:
                table, (fmt, compression) = placed
                file = RemoteFile(meta["path"], url, meta["e_tag"], meta["size"], fmt, compression)
                found[table].append(file)
    return RemoteInput(url, {name: sorted(files, key=_order) for name, files in found.items()})


def _order(file: RemoteFile) -> Path:
    """A directory's order (`find_files` sorts paths)."""
    return Path(file.key)


def _place(
    url: str, key: str, size: int, group: str, tables: Sequence[Table]
) -> tuple[str, tuple[str, str | None]] | None:
    """The table a key belongs to and its (format, compression); None for a folder marker;
    an InputError naming its URL for a key that is no file of any table."""
    parts = key.split("/")
    if any(p in ("", ".", "..") for p in parts):
        raise InputError(f"{url}/{key}: not a file name (an empty, '.' or '..' segment)")
    if size == 0 and len(parts) == 1:
        return None  # the group folder's marker
    entry = parts[1]
    check_entry(f"{url}/{group}/{entry}", entry, group, tables)
    table = entry.split(".", 1)[0]
    if len(parts) == 2:
        if size == 0 and entry == table:
            return None  # the table folder's marker
        return table, checked_kind(f"{url}/{key}", entry)
    if entry == table and len(parts) == 3:
        return table, checked_kind(f"{url}/{key}", parts[2])
    depth = 3 if entry == table else 2
    raise InputError(f"{url}/{'/'.join(parts[:depth])}: a folder, not a file")


@contextmanager
def named_as(root: Path, url: str) -> Iterator[None]:
    """Input errors raised while reading the copies under `root` name the objects' URLs."""
    try:
        yield
    except InputError as exc:
        raise InputError(str(exc).replace(str(root), url)) from exc


@contextmanager
def downloaded(listing: RemoteInput, root: Path | None, tables: Sequence[Table]) -> Iterator[Path]:
    """The tables' objects downloaded under `root` (a temporary folder if None), laid out as
    their keys are (an input directory), for as long as the block runs; errors inside it name
    the objects' URLs."""
    store = open_bucket(listing.url)
    with tempfile.TemporaryDirectory(prefix="pipeline-input-") as temporary:
        root = root or Path(temporary)
        try:
            root.mkdir(parents=True, exist_ok=True)
            files = [f for table in tables for f in listing.files(table)]
            with ThreadPoolExecutor(DOWNLOADS) as pool:  # obstore lets go of the GIL
                list(pool.map(lambda f: f.download(root, store), files))  # the first error
            with named_as(root, listing.url):
                yield root
        finally:
            shutil.rmtree(root, ignore_errors=True)


def raw_types(
    con: duckdb.DuckDBPyConnection, table: Table, files: Sequence[RemoteFile]
) -> dict[str, str]:
    """`ingest.raw_types` of objects: their Parquet schemas are read from their footers, so
    that the driver of a distributed build downloads no listings."""
    if not files or any(f.format != "parquet" for f in files):
        return {}  # `typed_columns`: text, unless every file is Parquet
    store = open_bucket(files[0].url)
    with tempfile.TemporaryDirectory(prefix="pipeline-footers-") as scratch:
        root = Path(scratch)
        with named_as(root, files[0].url):
            paths = [f.footer(root, store) for f in files]
            return typed_columns(table, paths, {p: parquet_columns(con, p) for p in paths})
