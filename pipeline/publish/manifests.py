"""The manifest in parts (docs/serving.md, "The bucket's layout"). Each version, a store's or
the common pages', carries the manifest rows of its own files: its part, `_manifest.parquet`
under its prefix, written once with it and never again. A release's manifest in the bucket is
the list of its parts (`manifest-parts.parquet`: each part's key and SHA-256). So a night
writes, uploads and reads the rows of the versions it made, and nothing of an unchanged one."""

from __future__ import annotations

import asyncio
import hashlib
import io
from collections.abc import Iterable
from typing import TYPE_CHECKING

import polars as pl

from pipeline.export.records.manifest import SCHEMA, Manifest
from pipeline.publish.bucket import COMMON, STORES, Release, get, group_of, put, sha256

if TYPE_CHECKING:
    from obstore.store import ObjectStore

PART = "_manifest.parquet"  # a version's part, beside its pages (no page has this name)
PARTS_LIST = "manifest-parts.parquet"  # the release's list of parts, under releases/<id>/
LIST_SCHEMA = {"key": pl.String, "sha256": pl.Binary}


def store_part(store_key: str, version: str) -> str:
    """The key of a store version's part."""
    return f"{STORES}{store_key}/{version}/{PART}"


def common_part(version: str) -> str:
    """The key of a common version's part."""
    return f"{COMMON}{version}/{PART}"


def part_bytes(rows: pl.DataFrame) -> bytes:
    """A part's bytes: `rows` (the manifest's columns) sorted by path, as Parquet."""
    buffer = io.BytesIO()
    rows.select(*SCHEMA).sort("path").write_parquet(buffer, statistics=False)
    return buffer.getvalue()


def list_bytes(parts: dict[str, bytes]) -> bytes:
    """The release's list of parts: each part's key and SHA-256 (`parts`), sorted by key."""
    keys = sorted(parts)
    frame = pl.DataFrame({"key": keys, "sha256": [parts[k] for k in keys]}, schema=LIST_SCHEMA)
    buffer = io.BytesIO()
    frame.write_parquet(buffer, statistics=False)
    return buffer.getvalue()


def release_parts(
    release: Release, store_shas: dict[str, bytes], common: bytes
) -> dict[str, bytes]:
    """The parts of `release` (part key -> SHA-256): each store version's, by its store in
    `store_shas`, and the common version's (`common`)."""
    parts = {store_part(k, v): store_shas[k] for k, v in release.stores.items()}
    parts[common_part(release.common)] = common
    return parts


async def get_list(store: ObjectStore, release: Release) -> dict[str, bytes] | None:
    """The release's list of parts (part key -> SHA-256), checked against the SHA-256 its
    document records; None when it is missing or not that list, or for a release of an
    earlier layout, whose manifest is not in parts."""
    if not release.manifest.endswith(PARTS_LIST):
        return None
    got = await get(store, release.manifest)
    if got is None or sha256(got.data) != release.manifest_sha256:
        return None
    frame = pl.read_parquet(io.BytesIO(got.data))
    return dict(zip(frame["key"].to_list(), frame["sha256"].to_list(), strict=True))


async def get_part(store: ObjectStore, key: str, digest: bytes) -> Manifest | None:
    """A part's rows, checked against `digest`; None when it is missing or not that part."""
    got = await get(store, key)
    if got is None or sha256(got.data) != digest.hex():
        return None
    return Manifest(pl.read_parquet(io.BytesIO(got.data)))


async def get_rows(
    store: ObjectStore, parts: Iterable[tuple[str, bytes]], jobs: int = 64
) -> Manifest | None:
    """The rows of every part of `parts` (key, SHA-256) together, sorted by path, read `jobs`
    at a time; None when any of them cannot be read as listed."""
    limit = asyncio.Semaphore(jobs)

    async def one(key: str, digest: bytes) -> Manifest | None:
        async with limit:
            return await get_part(store, key, digest)

    found = await asyncio.gather(*(one(k, d) for k, d in parts))
    if any(part is None for part in found):
        return None
    frames = [part.frame for part in found if part is not None]
    if not frames:
        return Manifest()
    return Manifest(pl.concat(frames).sort("path"))


def sha256_of(body: bytes) -> bytes:
    return hashlib.sha256(body).digest()


def version_parts(manifest: Manifest, release: Release, existing: set[str]) -> dict[str, bytes]:
    """The parts (key -> bytes) of the versions of `release` not in `existing` (the prefixes
    the bucket holds already), from the rows of `manifest`, its site's."""
    paths = manifest.frame["path"].to_list()
    groups = pl.Series([group_of(release.key(p) or "") for p in paths], dtype=pl.String)
    frame = manifest.frame.with_columns(group=groups).filter(~groups.is_in(list(existing)))
    parts = {
        f"{group}{PART}": part_bytes(rows)
        for (group,), rows in frame.partition_by("group", as_dict=True).items()
    }
    common = f"{COMMON}{release.common}/"
    if common not in existing:  # a site with no common page still has its (empty) part
        parts.setdefault(common + PART, part_bytes(Manifest().frame))
    return parts


async def put_bodies(store: ObjectStore, bodies: dict[str, bytes], jobs: int) -> None:
    """Write each object of `bodies` (key -> bytes), `jobs` at a time."""
    limit = asyncio.Semaphore(jobs)

    async def one(key: str, body: bytes) -> None:
        async with limit:
            await put(store, key, body)

    await asyncio.gather(*(one(k, b) for k, b in sorted(bodies.items())))


def changes_of(
    uploaded: pl.DataFrame, manifest: Manifest, base: Manifest
) -> tuple[pl.Series, pl.Series]:
    """(changed, removed) paths, as `Manifest.changes` gives them against the previous
    release, from the rows of the versions uploaded (`uploaded`: the others are the previous
    release's, unchanged) and `base`, the rows of the previous release's versions this one
    does not name again."""
    changed = uploaded.join(base.frame, on=["path", "sha256"], how="anti", maintain_order="left")
    removed = base.frame.join(manifest.frame, on="path", how="anti", maintain_order="left")
    return changed["path"], removed["path"]
