"""An input table's files: which entries make it, their formats and compression; an entry that
cannot be read is refused by name, never skipped. (docs/operating.md, "Input files")"""

from __future__ import annotations

import io
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa  # type: ignore[import-untyped]  # no stubs; only its codecs are used

from pipeline.contract import Table
from pipeline.errors import InputError

FORMATS = {".csv": "csv", ".parquet": "parquet", ".ndjson": "ndjson", ".jsonl": "ndjson"}
FORMATS[".json"] = "json"  # catalog API page dumps (`adapters`)
COMPRESSIONS = {".gz": "gzip", ".zst": "zstd"}
COMPRESSIBLE = ("csv", "ndjson")
_MAGIC = {"gzip": b"\x1f\x8b", "zstd": b"\x28\xb5\x2f\xfd"}
BOM = b"\xef\xbb\xbf"  # a UTF-8 byte order mark, which spreadsheet exports write first
ACCEPTED = ".csv, .parquet, .ndjson, .jsonl or .json; CSV and NDJSON also as .gz or .zst"


@dataclass(frozen=True, order=True)
class InputFile:
    """One file of a table: its path (as found under the input directory), its format (csv,
    parquet, ndjson, json), its compression (gzip, zstd or None) and, once listed, its
    `signature` then (`check_unchanged`)."""

    path: Path
    format: str
    compression: str | None = None
    signature: tuple[int, ...] | None = field(default=None, compare=False)

    def check_unchanged(self) -> None:
        """Stop the build if the file changed since it was listed: one that an export is still
        writing, or that was replaced, would give a mix of two files' rows. Called once it is
        read, this covers the listing, every read of it and the time between them."""
        try:
            now = signature(self.path.stat())
        except OSError as exc:
            raise InputError(f"{self.path}: cannot read: {exc.strerror or exc}") from exc
        if self.signature is not None and now != self.signature:
            raise changed(str(self.path), "size, modification time or inode")

    def source(self, input_dir: Path) -> str:
        """The file as the build names it (raw.*._source_file, the report): relative to the
        input directory."""
        return self.path.relative_to(input_dir).as_posix()

    @property
    def stem(self) -> str:
        """The name without its format and compression extensions: `Shop-A.csv.gz` -> `Shop-A`."""
        parts = 2 if self.compression else 1
        return self.path.name.rsplit(".", parts)[0]


def changed(name: str, what: str) -> InputError:
    """The one message for an input file (or object) that changed while the build read it,
    told by `what` (its stat, or its ETag)."""
    return InputError(
        f"{name}: changed while the build read it ({what}); nothing of it was used: build "
        "again once the export is complete"
    )


def missing(where: str, table: Table) -> InputError:
    """The one message for a required table with no file (`where`: its path or URL, less the
    extension)."""
    return InputError(
        f"{where}: missing required input (expected {table.name}.<ext> or a folder "
        f"{table.name}/ of such files; <ext>: {ACCEPTED})"
    )


def signature(st: os.stat_result) -> tuple[int, ...]:
    """What changes when a file is written to or replaced, at the cost of a stat: inode, size,
    modification and change times (the way git's index tells a changed file). Not the device,
    which a worker of a cluster may see under another number."""
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def kind_of(name: str) -> tuple[str, str | None] | None:
    """(format, compression) that a file name's extensions say, in any case; None: none."""
    stem, ext = os.path.splitext(name.lower())
    compression = COMPRESSIONS.get(ext)
    if compression:
        stem, ext = os.path.splitext(stem)
    fmt = FORMATS.get(ext)
    if fmt is None or (compression and fmt not in COMPRESSIBLE):
        return None
    return fmt, compression


def find_files(input_dir: Path, table: Table) -> list[InputFile]:
    """The files of a table, in a stable (sorted) order: `<group>/<table>.<ext>` and every
    entry of the folder `<group>/<table>/`. An entry that is not one is refused with its name."""
    root = input_dir.resolve()
    base = input_dir / table.group
    entries = [p for p in _entries(base) if p.name.startswith(f"{table.name}.")]
    folder = base / table.name
    if _is_dir(folder):
        entries += _entries(folder)
    return sorted(_checked(path, root) for path in entries)


def _is_dir(path: Path) -> bool:
    try:
        return stat.S_ISDIR(path.stat().st_mode)
    except (FileNotFoundError, NotADirectoryError):
        return False
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror or exc}") from exc


def _entries(folder: Path) -> list[Path]:
    """The entries of a folder (none if it is not one); one that cannot be listed stops the
    build with its name: its files would vanish."""
    if not _is_dir(folder):
        return []
    try:
        return sorted(folder.iterdir())
    except OSError as exc:
        raise InputError(f"{folder}: cannot read: {exc.strerror or exc}") from exc


def check_groups(input_dir: Path, tables: Sequence[Table]) -> None:
    """Each entry of a tables' folder (`catalog/`, `stores/`) is a table's file
    (`<table>.<ext>`) or folder (`<table>/`); anything else is refused with its name, in any
    case of it: `stores/Stores.csv` or `stores/excluded-categories.csv` would otherwise vanish,
    and an optional table with them."""
    for group in sorted({t.group for t in tables}):
        for entry in _entries(input_dir / group):
            check_entry(str(entry), entry.name, group, tables)


def check_entry(where: str, name: str, group: str, tables: Sequence[Table]) -> None:
    """An entry `name` of a tables' folder `group` is named for one of its tables."""
    names = sorted(t.name for t in tables if t.group == group)
    if name.split(".", 1)[0] not in names:
        raise InputError(
            f"{where}: not a file or folder of any table of {group}/ "
            f"(expected one of {', '.join(names)}, as <table>.<ext> or <table>/)"
        )


def _checked(path: Path, root: Path) -> InputFile:
    """The entry as an input file, or an InputError saying why it cannot be one."""
    try:
        st = path.stat()  # follows a link; never opens (a named pipe would block)
        mode = st.st_mode
    except FileNotFoundError:
        if path.is_symlink():
            raise InputError(f"{path}: a broken symbolic link (to {os.readlink(path)})") from None
        raise InputError(f"{path}: cannot read: vanished while the input was listed") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    if not path.resolve().is_relative_to(root):
        raise InputError(
            f"{path}: leads outside the input directory (to {path.resolve()}); "
            "a build reads only what its input directory holds"
        )
    if stat.S_ISDIR(mode):
        raise InputError(f"{path}: a folder, not a file")
    if not stat.S_ISREG(mode):
        what = "a named pipe" if stat.S_ISFIFO(mode) else "a socket or device"
        raise InputError(f"{path}: not a regular file ({what})")
    return InputFile(path, *checked_kind(str(path), path.name), signature=signature(st))


def checked_kind(where: str, name: str) -> tuple[str, str | None]:
    """(format, compression) of a file named `name`, or an InputError naming it (`where`)."""
    kind = kind_of(name)
    if kind is None:
        if any(name.lower().endswith(f".parquet{ext}") for ext in COMPRESSIONS):
            raise InputError(f"{where}: a compressed Parquet file (Parquet compresses its pages)")
        raise InputError(f"{where}: not an input file (expected {ACCEPTED})")
    return kind


def open_binary(file: InputFile) -> io.BufferedReader:
    """The file's bytes, decompressed as they are read (pyarrow's gzip and zstd codecs), less
    a leading UTF-8 byte order mark: the one place the BOM is dropped, for CSV and NDJSON
    alike (it is no part of the first column's name, nor of the first record)."""
    if file.compression is None:
        fh = file.path.open("rb")
    else:
        magic = _MAGIC[file.compression]
        with file.path.open("rb") as raw:
            if raw.read(len(magic)) != magic:
                raise InputError(f"{file.path}: not {file.compression} data, as its name says")
        stream = pa.input_stream(str(file.path), compression=file.compression)
        fh = io.BufferedReader(stream)  # lines and read-ahead over pyarrow's raw stream
    if fh.peek(len(BOM))[: len(BOM)] == BOM:
        fh.read(len(BOM))
    return fh


def open_text(file: InputFile) -> io.TextIOWrapper:
    """The file as UTF-8 text, lines untranslated (for the csv module); bytes that are not
    UTF-8 come through as surrogates, for the reader to report."""
    return io.TextIOWrapper(
        open_binary(file), encoding="utf-8", errors="surrogateescape", newline=""
    )
