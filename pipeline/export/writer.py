"""The writer of one release's site: files written, hard-linked when unchanged, or carried over
a store at a time, and the hash of each recorded for the manifest."""

from __future__ import annotations

import hashlib
import itertools
import os
import secrets
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

import polars as pl

from pipeline.api.urls import STORES_DIR, store_of
from pipeline.export.files import FileCreator
from pipeline.export.records import filestat
from pipeline.export.records.manifest import CHUNK, SCHEMA, Manifest, rows_under


@dataclass
class SiteWriter:
    """Writes one release's site and records its files' hashes.

    A file equal to the previous release's, unchanged on disk, is a hard link to it. With a
    `pool`, a store's folder is a symlink to `<key>-<digest>` in the pool. Use as a context
    manager, or call `close()`, which raises the first error."""

    root: Path
    previous_site: Path | None = None  # the published release's site
    previous: Manifest = field(default_factory=Manifest)
    pool: Path | None = None
    staging: Path | None = None
    recorded: pl.DataFrame = field(default_factory=filestat.empty)  # the previous site's files
    # The previous release's pages are not on this disk (a Ray night's bucket, whose versions
    # are never changed once written): a store whose digest equals its record's is carried by
    # the record alone, no file and no manifest row here (the caller has its rows).
    carry_by_record: bool = False
    linked: int = field(default=0, init=False)  # files carried over as hard links

    def __post_init__(self) -> None:
        self._records: tuple[list[str], list[bytes], list[int]] = ([], [], [])
        self._chunks: list[pl.DataFrame] = []
        self._folder: str | None = None
        self._folder_digests: dict[str, bytes] = {}
        self._store_dirs: dict[str, str] = {}  # store key -> folder its files are written to
        self._staged: list[tuple[str, str]] = []  # new pool folders: (store key, name)
        self._carried: list[pl.DataFrame] = []  # records of the files carried over, verified
        self._creator = FileCreator()

    def __enter__(self) -> SiteWriter:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if kind is None:
            self.close()
        else:
            self._creator.abort()

    def write(self, name: str, body: bytes) -> None:
        """Write `body` at `name` (relative, "/"-separated), or link it when unchanged."""
        digest = hashlib.sha256(body).digest()
        self._record(name, digest, len(body))
        source = None
        if self.previous_site is not None and self._previous_digest(name) == digest:
            recorded = rows_under(self.recorded, name.rpartition("/")[0]).filter(path=name)
            if len(recorded) and filestat.unchanged(self.previous_site, recorded).all():
                source = f"{self.previous_site}/{name}"
        self._creator.submit((self._target(name), body, source))

    def previous_file(self, name: str) -> bytes | None:
        """The previous release's file at `name`, when it holds the bytes its manifest records
        (None otherwise, or without one)."""
        digest = self.previous.hashes_under(name.rpartition("/")[0]).get(name)
        if self.previous_site is None or digest is None:
            return None
        try:
            body = (self.previous_site / name).read_bytes()
        except OSError:
            return None
        return body if hashlib.sha256(body).digest() == digest else None

    def open_store(self, key: str, folder: str) -> str:
        """Where the files of store `key` are created: the pool folder `folder` (with a pool),
        or the store's folder of the site (see `close` for a pool folder of that name already
        there)."""
        if self.pool is None or self.staging is None:
            return f"{self.root}/{STORES_DIR}/{key}"
        self._store_dirs[key] = f"{self.staging}/{folder}"
        self._staged.append((key, folder))
        link = self.root / STORES_DIR / key
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.relpath(self.pool / folder, link.parent))
        return self._store_dirs[key]

    def write_pages(self, pages: pl.DataFrame) -> None:
        """Many files at once: columns `path` (in the site), `body` (binary) and `target` (where
        the file is created). A file whose bytes equal the previous release's is linked. The
        bodies stay in one Arrow buffer, hashed and handed to the children as slices of it."""
        column = pages["body"].to_arrow(compat_level=pl.CompatLevel.oldest())  # large_binary
        _, offset_buffer, data_buffer = column.buffers()
        offsets = memoryview(offset_buffer).cast("q")[
            column.offset : column.offset + len(column) + 1
        ]
        data = memoryview(data_buffer)
        digests = pl.Series(
            [hashlib.sha256(data[a:b]).digest() for a, b in itertools.pairwise(offsets)],
            dtype=pl.Binary,
        )
        frame = pl.DataFrame({"path": pages["path"], "sha256": digests})
        frame = frame.with_columns(bytes=pages["body"].bin.size().cast(pl.Int64))
        self._flush_records()
        self._chunks.append(frame)
        sources: list[str | None] = [None] * frame.height
        if self.previous_site is not None and len(self.previous):
            folders = frame["path"].str.replace(r"/[^/]*$", "").unique().to_list()
            before = pl.concat([self.previous.slice_under(f) for f in folders]).unique("path")
            same = frame.join(
                before.select("path", "sha256", same=pl.lit(True)),
                on=["path", "sha256"],
                how="left",
                maintain_order="left",
            )["same"]
            if same.any():  # and found as it was written
                same = self._unchanged(frame["path"], same)
            if same.any():
                prefix = f"{self.previous_site}/"
                sources = (
                    pl.select(pl.when(same).then(prefix + frame["path"]).alias("source"))
                    .to_series()
                    .to_list()
                )
        self._creator.submit_many(pages["target"].to_list(), offsets, data, sources)

    def can_carry(self, key: str) -> bool:
        """Whether the previous release has the folder of store `key` to carry over, whole and
        as written: every file its manifest names there, each as a stat of it was recorded
        (`filestat`: a stat a file, no file read). A folder changed since (a file overwritten,
        replaced or deleted) is not carried: the store is built again, into a new pool folder,
        linking only its files that are unchanged. Carried by its record alone: always."""
        if self.carry_by_record:
            return True
        if self.previous_site is None:
            return False
        folder = f"{STORES_DIR}/{key}"
        named = self.previous.slice_under(folder)["path"]
        recorded = rows_under(self.recorded, folder)
        if not named.equals(recorded["path"]):  # a file without its record (or a stray record)
            return False
        return bool(filestat.unchanged(self.previous_site, recorded).all())

    def carry(self, key: str) -> int:
        """Take store `key`'s files from the previous release, whose pages are known to be
        unchanged and found as written (`can_carry`), without building them: its pool folder's
        symlink, or a link per file. Carried by its record alone: nothing."""
        if self.carry_by_record:
            return 0
        folder = f"{STORES_DIR}/{key}"
        part = self.previous.slice_under(folder)
        self._flush_records()
        self._chunks.append(part)
        self._carried.append(rows_under(self.recorded, folder))
        if self.previous_site is None:
            raise RuntimeError(f"store {key}: carried over by a writer with no previous release")
        old = self.previous_site / folder
        if self.pool is not None and old.is_symlink():
            # The same pool folder, linked from where this site is (the previous link's text is
            # relative to the previous release's site).
            pooled = os.path.basename(os.readlink(old))
            link = self.root / folder
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(os.path.relpath(self.pool / pooled, link.parent))
            return part.height
        for name in part["path"].to_list():
            self._creator.submit((self._target(name), None, f"{self.previous_site}/{name}"))
        return part.height

    def close(self) -> None:
        """Wait for the last file; move the new pool folders into the pool.

        A pool folder already there is never written into. It is kept, and the new one
        dropped, only when it holds the very files of the new one (same names, same inodes).
        Otherwise the new folder gets a name of its own."""
        self._creator.close()
        self.linked = self._creator.linked
        for key, folder in self._staged:
            pool, staging = self._pool()
            staged = staging / folder
            if not staged.exists():  # a store with no page at all
                staged.mkdir(parents=True)
            try:
                staged.rename(pool / folder)
                continue
            except OSError:
                pooled = pool / folder
                if not pooled.is_dir():
                    raise
            if _inodes(pooled) == _inodes(staged):
                shutil.rmtree(staged)
                continue
            own = f"{folder}-{secrets.token_hex(4)}"
            staged.rename(pool / own)
            link = self.root / STORES_DIR / key
            link.unlink()  # not published yet: no reader follows it
            link.symlink_to(os.path.relpath(pool / own, link.parent))
        self._staged = []

    def _target(self, name: str) -> str:
        """Where the file of site path `name` is created."""
        key = store_of(name) if self._store_dirs else None
        if key in self._store_dirs:
            rest = name.removeprefix(f"{STORES_DIR}/{key}/")
            return f"{self._store_dirs[key]}/{rest}"
        return f"{self.root}/{name}"

    def carried(self) -> pl.DataFrame | None:
        """The records of the files carried over (checked by `can_carry`): the new release's
        records of them, as a stat of them would give now."""
        return pl.concat(self._carried) if self._carried else None

    def _pool(self) -> tuple[Path, Path]:
        """The pool and the folder its new folders are staged in (a writer's stores are in a
        pool only when it has both)."""
        if self.pool is None or self.staging is None:
            raise RuntimeError("a store's pool folder, in a site writer with no pool")
        return self.pool, self.staging

    def manifest(self) -> Manifest:
        """Every file written so far (after `close()`: every file of the site)."""
        self._flush_records()
        manifest = Manifest(pl.concat(self._chunks, rechunk=False) if self._chunks else None)
        self._chunks = [manifest.frame]  # the chunks' memory goes
        return manifest

    def _record(self, name: str, digest: bytes, size: int) -> None:
        names, digests, sizes = self._records
        names.append(name)
        digests.append(digest)
        sizes.append(size)
        if len(names) >= CHUNK:
            self._flush_records()

    def _flush_records(self) -> None:
        names, digests, sizes = self._records
        if names:
            columns = {"path": names, "sha256": digests, "bytes": sizes}
            self._chunks.append(pl.DataFrame(columns, schema=SCHEMA))
            self._records = ([], [], [])

    def _unchanged(self, paths: pl.Series, same: pl.Series) -> pl.Series:
        """`same` (a flag for each of `paths`), kept only where the previous release's file
        at that path is found as it was written: a stat of it (of the flagged files only)
        equals its record."""
        assert self.previous_site is not None
        same = same.fill_null(False)
        flagged = paths.filter(same).to_frame("path")
        recorded = flagged.join(self.recorded, on="path", how="left", maintain_order="left")
        verified = filestat.unchanged(self.previous_site, recorded)
        return same.scatter(same.arg_true(), verified)

    def _previous_digest(self, name: str) -> bytes | None:
        folder = name.rpartition("/")[0]
        if folder != self._folder:  # pages come folder by folder: one slice per store
            self._folder, self._folder_digests = folder, self.previous.hashes_under(folder)
        return self._folder_digests.get(name)


def _inodes(folder: Path) -> dict[str, int]:
    """The files under `folder`, as paths relative to it, with their inodes (from the folders'
    listings: no stat)."""
    found: dict[str, int] = {}
    pending = [(str(folder), "")]
    while pending:
        path, prefix = pending.pop()
        with os.scandir(path) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    pending.append((entry.path, f"{prefix}{entry.name}/"))
                else:
                    found[prefix + entry.name] = entry.inode()
    return found
