"""The writer of one release's site: files written, hard-linked when unchanged, or carried over
a store at a time, and the hash of each recorded for the manifest."""

from __future__ import annotations

import hashlib
import itertools
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

import polars as pl

from pipeline.api.urls import STORES_DIR, store_of
from pipeline.errors import BuildError
from pipeline.export.files import FileCreator
from pipeline.export.manifest import CHUNK, SCHEMA, Manifest
from pipeline.paths import set_aside


@dataclass
class SiteWriter:
    """Writes the files of one release's site and records their hashes. A file whose bytes equal
    the previous release's is a hard link to it: no bytes written, nothing to upload.

    With a `pool` (OUTPUT/pages), each store's folder in the site is a symlink to a folder of
    the pool named for the store and its digest, `<key>-<digest>`: a store unchanged since the
    previous release costs one symlink, not a link per file. New pool folders are written under
    `staging` and join the pool when the writer closes; a pool folder is never changed once
    there. Without a pool, stores' folders are plain folders of the site.

    The files are created by child processes (`pipeline.export.files`, one a core beside this one's)
    while this one builds the next pages. Use as a context manager, or call `close()`: it
    waits for the last file and raises the first error."""

    root: Path
    previous_site: Path | None = None  # the published release's site
    previous: Manifest = field(default_factory=Manifest)
    pool: Path | None = None
    staging: Path | None = None
    linked: int = field(default=0, init=False)  # files carried over as hard links

    def __post_init__(self) -> None:
        self._records: tuple[list[str], list[bytes], list[int]] = ([], [], [])
        self._chunks: list[pl.DataFrame] = []
        self._folder: str | None = None
        self._folder_digests: dict[str, bytes] = {}
        self._store_dirs: dict[str, str] = {}  # store key -> folder its files are written to
        self._staged: list[str] = []  # new pool folders
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
            source = f"{self.previous_site}/{name}"
        self._creator.submit((self._target(name), body, source))

    def open_store(self, key: str, folder: str) -> str:
        """Where the files of store `key` are created: the pool folder `folder` (with a pool),
        or the store's folder of the site."""
        if self.pool is None or self.staging is None:
            return f"{self.root}/{STORES_DIR}/{key}"
        self._store_dirs[key] = f"{self.staging}/{folder}"
        self._staged.append(folder)
        link = self.root / STORES_DIR / key
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.relpath(self.pool / folder, link.parent))
        return self._store_dirs[key]

    def link_store(self, key: str, folder: str) -> None:
        """Store `key`'s folder of the site: a link to the pool folder `folder`, already whole
        in the pool (a shard of the same output wrote it)."""
        pool, _ = self._pool()
        if not (pool / folder).is_dir():
            raise BuildError(f"{pool / folder}: store {key}'s pool folder is missing")
        link = self.root / STORES_DIR / key
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.relpath(pool / folder, link.parent))

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
            if same.any():
                prefix = f"{self.previous_site}/"
                sources = (
                    pl.select(pl.when(same).then(prefix + frame["path"]).alias("source"))
                    .to_series()
                    .to_list()
                )
        self._creator.submit_many(pages["target"].to_list(), offsets, data, sources)

    def can_carry(self, key: str) -> bool:
        """Whether the previous release has the folder of store `key` to carry over, whole:
        every file its manifest names there (a listing of the folder, no file read). A folder
        damaged since, a file deleted, is not carried: the store is built again, and its new
        folder replaces the damaged one in the pool (`close`)."""
        if self.previous_site is None:
            return False
        folder = self.previous_site / STORES_DIR / key
        if not folder.is_dir():
            return False
        prefix = f"{STORES_DIR}/{key}/"
        named = self.previous.slice_under(f"{STORES_DIR}/{key}")["path"].str.strip_prefix(prefix)
        return set(named.to_list()) <= _files(folder)

    def carry(self, key: str) -> int:
        """Take store `key`'s files from the previous release, whose pages are known to be
        unchanged, without building them: its pool folder's symlink, or a link per file."""
        folder = f"{STORES_DIR}/{key}"
        part = self.previous.slice_under(folder)
        self._flush_records()
        self._chunks.append(part)
        if self.previous_site is None:
            raise RuntimeError(f"store {key}: carried over by a writer with no previous release")
        old = self.previous_site / folder
        if self.pool is not None and old.is_symlink():
            link = self.root / folder
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(os.readlink(old))  # relative, and releases are siblings
            return part.height
        for name in part["path"].to_list():
            self._creator.submit((self._target(name), None, f"{self.previous_site}/{name}"))
        return part.height

    def adopt(self, site: str, name: str) -> None:
        """Take a finished file of another site (a shard's) into this one, without its bytes.
        (Not recorded: the caller has its hash already.)"""
        self._creator.submit((self._target(name), None, f"{site}/{name}"))

    def close(self) -> None:
        """Wait for the last file; move the new pool folders into the pool."""
        self._creator.close()
        self.linked = self._creator.linked
        for folder in self._staged:
            pool, staging = self._pool()
            staged = staging / folder
            if not staged.exists():  # a store with no page at all
                staged.mkdir(parents=True)
            try:
                staged.rename(pool / folder)
            except OSError:  # already in the pool: the same digest, so the same files
                pooled = pool / folder
                if not pooled.is_dir():
                    raise
                if _files(pooled) == _files(staged):
                    shutil.rmtree(staged)
                else:  # what a kill in the middle of a deletion left: replaced, never used
                    shutil.rmtree(set_aside(pooled))
                    staged.rename(pooled)
        self._staged = []

    def _target(self, name: str) -> str:
        """Where the file of site path `name` is created."""
        key = store_of(name) if self._store_dirs else None
        if key in self._store_dirs:
            rest = name.removeprefix(f"{STORES_DIR}/{key}/")
            return f"{self._store_dirs[key]}/{rest}"
        return f"{self.root}/{name}"

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

    def _previous_digest(self, name: str) -> bytes | None:
        folder = name.rpartition("/")[0]
        if folder != self._folder:  # pages come folder by folder: one slice per store
            self._folder, self._folder_digests = folder, self.previous.under(folder)
        return self._folder_digests.get(name)


def _files(folder: Path) -> set[str]:
    """The files under `folder`, as paths relative to it."""
    return {
        os.path.relpath(os.path.join(parent, name), folder)
        for parent, _, names in os.walk(folder)
        for name in names
    }
