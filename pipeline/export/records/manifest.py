"""The manifest of a release: every file of its site with its SHA-256 and size, held in
columns (polars); and the changes since the previous release."""

from __future__ import annotations

import io
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa  # type: ignore[import-untyped]  # no stubs
import pyarrow.parquet as pq  # type: ignore[import-untyped]  # no stubs

from pipeline.paths import MANIFEST, MANIFEST_PARQUET

SCHEMA = {"path": pl.String, "sha256": pl.Binary, "bytes": pl.Int64}
# `manifest.parquet`'s schema and row groups (`write_manifest_parquet`); a Ray night composes
# the manifest and writes its JSON a row group at a time (`distributed.compose`).
PARQUET_SCHEMA = pa.schema([("path", pa.string()), ("sha256", pa.binary()), ("bytes", pa.int64())])
ROW_GROUP = 25_000
_HEAD, _TAIL = b'{"files":[\n', b"\n]}\n"
CHUNK = 100_000  # rows of the manifest handled at a time


class Manifest:
    """path, sha256 (32 bytes) and bytes of every file of a site, sorted by path."""

    def __init__(self, frame: pl.DataFrame | None = None) -> None:
        frame = pl.DataFrame(schema=SCHEMA) if frame is None else frame.select(*SCHEMA)
        if not frame["path"].is_sorted():
            frame = frame.sort("path")  # the one copy: millions of rows at full scale
        self.frame = frame
        paths = self.frame["path"]
        twice = paths.filter(paths == paths.shift(1))  # sorted: a repeat is its neighbour
        if len(twice):
            raise ValueError(f"{twice[0]}: the same file twice in one site")

    def __len__(self) -> int:
        return self.frame.height

    @property
    def total_bytes(self) -> int:
        return int(self.frame["bytes"].sum())

    @classmethod
    def load(cls, release: Path | None) -> Manifest:
        """The manifest of a published release, from its Parquet copy (the JSON of millions of
        files takes gigabytes to parse); empty when there is none."""
        if release is None:
            return cls()
        return cls(pl.read_parquet(release / MANIFEST_PARQUET))

    @classmethod
    def load_json(cls, release: Path) -> Manifest:
        """The manifest of a release from its `manifest.json` (`load`'s fallback: slower, and
        vouched for by no seal); raises `ValueError` or polars' errors for anything else."""
        files = pl.read_json(release / MANIFEST).explode("files").unnest("files")
        return cls(files.with_columns(pl.col("sha256").str.decode("hex")).cast(pl.Schema(SCHEMA)))

    def parquet(self) -> bytes:
        """The bytes of its Parquet copy, as `write` writes them."""
        sink = pa.BufferOutputStream()
        write_manifest_parquet(sink, [self.frame.to_arrow()])
        return bytes(sink.getvalue().to_pybytes())

    def write(self, release: Path) -> None:
        """`manifest.json` in the release, and its Parquet copy for the next build."""
        write_manifest_parquet(str(release / MANIFEST_PARQUET), [self.frame.to_arrow()])
        write_manifest_json(release / MANIFEST, [self.frame])

    def slice_under(self, folder: str) -> pl.DataFrame:
        """The files under `folder` ("a/b"): a slice of the sorted paths."""
        return rows_under(self.frame, folder)

    def hashes_under(self, folder: str) -> dict[str, bytes]:
        """path -> SHA-256 of the files under `folder`."""
        part = self.slice_under(folder)
        return dict(zip(part["path"].to_list(), part["sha256"].to_list(), strict=True))

    def changes(self, previous: Manifest) -> tuple[pl.Series, pl.Series]:
        """(changed, removed) paths against `previous`, sorted: what a sync to a static host
        uploads and deletes."""
        changed = self.frame.join(
            previous.frame, on=["path", "sha256"], how="anti", maintain_order="left"
        )["path"]
        removed = previous.frame.join(self.frame, on="path", how="anti", maintain_order="left")
        return changed, removed["path"]


def rows_under(frame: pl.DataFrame, folder: str) -> pl.DataFrame:
    """The rows of `frame` (sorted by its `path`) for the files under `folder` ("a/b")."""
    paths = frame["path"]
    # Every path under "a/b/" sorts between "a/b/" and "a/b0" ("0" follows "/").
    lo = int(paths.search_sorted(folder + "/", "left"))
    hi = int(paths.search_sorted(folder + "0", "left"))
    return frame.slice(lo, hi - lo)


def write_manifest_parquet(sink: str | pa.NativeFile, batches: Iterable[Any]) -> None:
    """The manifest's Parquet copy of the rows of `batches` (Arrow tables or record batches:
    path, sha256, bytes; in path order): its one writer, for a frame in memory and for the
    rows a Ray night composes out of core (`distributed.compose`) alike. Rows go out in row
    groups of ROW_GROUP, each written from one contiguous chunk, with the same options, so the
    same rows make the same bytes however they come cut."""
    options = {"compression": "zstd", "use_dictionary": False, "write_statistics": False}
    with pq.ParquetWriter(sink, PARQUET_SCHEMA, **options) as writer:
        held: list[Any] = []
        count = 0
        for batch in batches:
            table = batch if isinstance(batch, pa.Table) else pa.Table.from_batches([batch])
            held.append(table.select(PARQUET_SCHEMA.names))
            count += table.num_rows
            while count >= ROW_GROUP:  # a group at a time: cast and copied, never the whole
                rows = pa.concat_tables(held)
                writer.write_table(rows.slice(0, ROW_GROUP).cast(PARQUET_SCHEMA).combine_chunks())
                held, count = [rows.slice(ROW_GROUP)], count - ROW_GROUP
        if count:
            writer.write_table(pa.concat_tables(held).cast(PARQUET_SCHEMA).combine_chunks())


def write_manifest_json(path: Path, batches: Iterable[pl.DataFrame]) -> None:
    """`manifest.json` of the files in `batches` (path, sha256, bytes; in path order), one
    line a file: the same bytes however the rows are cut into batches."""
    with path.open("wb") as fh:
        fh.write(_HEAD)
        line = pl.struct("path", pl.col("sha256").bin.encode("hex"), "bytes")
        _write_json_lines(fh, batches, line.struct.json_encode())
        fh.write(_TAIL)


def write_changes(path: Path, changed: pl.Series, removed: pl.Series) -> None:
    """`{"changed":[…],"removed":[…]}`, one path a line."""
    write_changes_from(path, [changed.to_frame("path")], [removed.to_frame("path")])


def write_changes_from(
    path: Path, changed: Iterable[pl.DataFrame], removed: Iterable[pl.DataFrame]
) -> None:
    """`write_changes` of the paths in batches (frames of one column, `path`), streamed: the
    same bytes however they are cut."""
    with path.open("wb") as fh:
        for head, batches in ((b'{"changed":[', changed), (b'],\n"removed":[', removed)):
            fh.write(head)
            frames = (f.select(pl.col("path").cast(pl.String)) for f in batches)
            # A JSON string: the value of {"path":…}, as polars encodes it.
            line = pl.struct("path").struct.json_encode().str.strip_prefix('{"path":')
            if _write_json_lines(fh, frames, line.str.strip_suffix("}"), b"\n"):
                fh.write(b"\n")
        fh.write(b"]}\n")


def _write_json_lines(
    fh: io.BufferedWriter, batches: Iterable[pl.DataFrame], line: pl.Expr, lead: bytes = b""
) -> bool:
    """`line` (a JSON text) of every row of `batches`, one a line, separated by commas, after
    `lead` when there is any row; made and joined in polars, `CHUNK` rows at a time. Whether
    there was a row."""
    wrote = False
    for batch in batches:
        for start in range(0, batch.height, CHUNK):
            text = batch.slice(start, CHUNK).select(line.str.join(",\n")).item()
            fh.write((b",\n" if wrote else lead) + text.encode())
            wrote = True
    return wrote


def file_counts(manifest: Manifest, changed: pl.Series, removed: pl.Series) -> dict[str, int]:
    """The report's counts of a site's files, from its manifest and its changes."""
    return {
        "files": len(manifest),
        "files_unchanged": len(manifest) - len(changed),
        "files_removed": len(removed),
        "bytes": manifest.total_bytes,
    }
