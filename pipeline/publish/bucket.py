"""An object store's bucket as publishing lays it out, opened from its URL with obstore.
(docs/serving.md, "The bucket's layout"; the protocol is `objectstore.py`'s)"""

from __future__ import annotations

import asyncio
import hashlib
import io
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import obstore as obs
import orjson
import polars as pl

from pipeline.api.responses import content_type
from pipeline.api.urls import STORES_DIR, store_column, store_of
from pipeline.errors import BuildError
from pipeline.export.records.manifest import Manifest
from pipeline.remote import FAILURES as FAILURES  # re-exported: the URL rules' one home
from pipeline.remote import RETRY as RETRY
from pipeline.remote import SCHEMES as SCHEMES
from pipeline.remote import check_url as check_url
from pipeline.remote import missing_bucket
from pipeline.remote import open_bucket as open_bucket

if TYPE_CHECKING:
    from obstore.store import ObjectStore

POINTER = "current.json"
LEASE = "lease.json"
RELEASES = "releases/"
STORES = "stores/"
COMMON = "common/"
BUILDS = "builds/"
RELEASE_DOC = "release.json"
PART_STORES = 10_000  # stores a part of the release's map


def attributes(key: str) -> dict[str, str]:
    """The headers an object is served with: its file's content type (a page's JSON, the help
    page's HTML, a bulk file's CSV or Parquet)."""
    return {"Content-Type": content_type(key)}


@dataclass(frozen=True)
class Stored:
    """An object as read: its bytes and its ETag."""

    data: bytes
    e_tag: str | None


async def get(store: ObjectStore, key: str) -> Stored | None:
    """The object's bytes and ETag; None when there is none."""
    try:
        got = await obs.get_async(store, key)
        return Stored(bytes(await got.bytes_async()), got.meta["e_tag"])
    except FileNotFoundError as exc:
        if (missing := missing_bucket(exc)) is not None:
            raise missing from None
        return None


async def put(store: ObjectStore, key: str, body: bytes | Path, mode: Any = None) -> str | None:
    """Write one object (a file is read by obstore), conditionally with `mode` ("create", or
    {"e_tag": ...}); its new ETag."""
    try:
        done = await obs.put_async(store, key, body, attributes=attributes(key), mode=mode)
    except FileNotFoundError as exc:
        if (missing := missing_bucket(exc)) is not None:
            raise missing from None
        raise
    return done["e_tag"]


async def put_files(
    store: ObjectStore,
    folder: Path,
    files: Iterable[tuple[str, str]],
    jobs: int,
    done: Callable[[str], None] | None = None,
) -> None:
    """Upload the files (path under `folder`, key), `jobs` at a time (obstore retries each);
    returns when every one is written."""
    pending = iter(files)

    async def worker(todo: Iterator[tuple[str, str]]) -> None:
        for path, key in todo:  # shared: each worker takes the next file
            await put(store, key, folder / path)
            if done is not None:
                done(key)

    await asyncio.gather(*(worker(pending) for _ in range(jobs)))


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class Damaged(BuildError):
    """An object of the protocol that cannot be read as what it should be."""


@dataclass(frozen=True)
class Release:
    """A release as the bucket holds it: which version of each store, and of the common
    pages, its site is made of."""

    release: str  # <build_id>.<publish>
    build_id: str
    common: str  # the common pages' version
    stores: dict[str, str]  # storeKey -> version
    manifest: str  # its list of manifest parts' key (`manifests.PARTS_LIST`)
    manifest_sha256: str
    # A Ray night's: the prefixes of the shard attempts whose parts it was built from, kept
    # with it (the listings' raw rows, for analysts); the other attempts' are leftovers.
    shard_parts: tuple[str, ...] = ()
    common_part_sha256: str = ""  # the common version's manifest part's SHA-256 (hex)

    def key(self, path: str) -> str | None:
        """The key of the site file at `path` (v1.39.0/...); None for a store it lacks."""
        store_key = store_of(path)
        if store_key is not None:
            rest = path.removeprefix(f"{STORES_DIR}/{store_key}/")
            version = self.stores.get(store_key)
            return f"{STORES}{store_key}/{version}/{rest}" if version and rest else None
        return f"{COMMON}{self.common}/{path}"

    def prefixes(self) -> set[str]:
        """The key prefixes of every version it names, and of its own documents."""
        named = {f"{STORES}{k}/{v}/" for k, v in self.stores.items()} | set(self.shard_parts)
        return named | {f"{COMMON}{self.common}/", f"{RELEASES}{self.release}/"}


def group_of(key: str) -> str | None:
    """The version (or release) prefix an object belongs to; None for anything else (the
    pointer, the lease, keys of other layouts), which collection never deletes."""
    parts = key.split("/")
    if parts[0] + "/" in (STORES, BUILDS) and len(parts) > 3:
        return f"{parts[0]}/{parts[1]}/{parts[2]}/"
    if parts[0] + "/" in (COMMON, RELEASES) and len(parts) > 2:
        return f"{parts[0]}/{parts[1]}/"
    return None


def damaged(url: str, key: str, what: str) -> Damaged:
    return Damaged(
        f"{url}/{key}: {what}; if no publish is running, publish again with --take-over to "
        "replace it"
    )


async def load_release(store: ObjectStore, url: str, document: str, digest: str) -> Release:
    """The release whose document is at `document` with SHA-256 `digest`, its parts checked
    against the document's digests. A missing or damaged one raises `Damaged`."""
    got = await get(store, document)
    if got is None or sha256(got.data) != digest:
        raise damaged(url, document, "missing, or not the release the pointer names")
    doc = orjson.loads(got.data)
    stores: dict[str, str] = {}
    for part in doc["parts"]:
        body = await get(store, part["key"])
        if body is None or sha256(body.data) != part["sha256"]:
            raise damaged(url, part["key"], "missing, or not the part its release names")
        stores.update(orjson.loads(body.data))
    return Release(
        doc["release"],
        doc["build_id"],
        doc["common"],
        stores,
        doc["manifest"],
        doc["manifest_sha256"],
        tuple(doc.get("shard_parts", ())),
        str(doc.get("common_part_sha256", "")),
    )


def release_documents(release: Release) -> list[tuple[str, bytes]]:
    """(key, bytes) of the map's parts, then of the release document naming them (last)."""
    prefix = f"{RELEASES}{release.release}/"
    keys = sorted(release.stores)
    written: list[tuple[str, bytes]] = []
    for n, start in enumerate(range(0, len(keys), PART_STORES)):
        part = {k: release.stores[k] for k in keys[start : start + PART_STORES]}
        written.append((f"{prefix}stores-{n:05d}.json", orjson.dumps(part)))
    doc = {
        "release": release.release,
        "build_id": release.build_id,
        "common": release.common,
        "stores": len(keys),
        "parts": [{"key": k, "sha256": sha256(b)} for k, b in written],
        "manifest": release.manifest,
        "manifest_sha256": release.manifest_sha256,
    }
    if release.shard_parts:
        doc["shard_parts"] = list(release.shard_parts)
    doc["common_part_sha256"] = release.common_part_sha256
    return [*written, (prefix + RELEASE_DOC, orjson.dumps(doc))]


def versions(manifest: Manifest, token: str) -> tuple[dict[str, str], str]:
    """Each store's version, and the common pages', for the site of `manifest`: the SHA-256
    of its files' paths (under its folder) and SHA-256s, then `token`."""
    frame = manifest.frame
    frame = frame.with_columns(store=store_column(pl.col("path")))
    in_stores = pl.col("store").is_not_null()
    stores = frame.filter(in_stores).select(
        "store",
        rel=pl.col("path").str.slice(len(STORES_DIR) + 1).str.replace(r"^[^/]+/", ""),
        sha256="sha256",
    )
    common = frame.filter(~in_stores).select(store=pl.lit(""), rel="path", sha256="sha256")
    hashers: dict[str, Any] = {}
    for store_key, rel, digest in pl.concat([stores, common]).iter_rows():
        hasher = hashers.get(store_key) or hashers.setdefault(store_key, hashlib.sha256())
        hasher.update(rel.encode() + b"\0" + digest + b"\n")
    named = {k: f"{h.hexdigest()[:16]}-{token}" for k, h in hashers.items()}
    common_version = named.pop("", f"{hashlib.sha256().hexdigest()[:16]}-{token}")
    return named, common_version


def content_versions(manifest: Manifest) -> tuple[dict[str, str], str]:
    """`versions` without a token: each store's content part, and the common pages'."""
    stores, common = versions(manifest, "")
    return {k: v.removesuffix("-") for k, v in stores.items()}, common.removesuffix("-")


# The stores' records as the bucket keeps them (`releases/<release>/stores.parquet`): the local
# release's (`digests.write_store_records`) with each store's version in this release.
VERSIONED_RECORDS = {
    "store_key": pl.String,
    "digest": pl.Binary,
    "channels": pl.Int64,
    "products": pl.Int64,
    "pages": pl.Int64,
    "version": pl.String,
    "part_sha256": pl.Binary,  # its version's manifest part's (`manifests`)
}


def versioned_records(local: Path, stores: dict[str, str], parts: dict[str, bytes]) -> bytes:
    """The Parquet of a local release's stores' records (its `stores.parquet`), each with its
    version in `stores` and the SHA-256 of that version's manifest part in `parts`; a store
    with no record (a release from before them) is left out: the next night builds it again."""
    keys = list(stores)
    frame = pl.read_parquet(local).join(
        pl.DataFrame(
            {
                "store_key": keys,
                "version": [stores[k] for k in keys],
                "part_sha256": [parts[k] for k in keys],
            },
            schema={"store_key": pl.String, "version": pl.String, "part_sha256": pl.Binary},
        ),
        on="store_key",
        how="inner",
    )
    buffer = io.BytesIO()
    frame.select(*VERSIONED_RECORDS).sort("store_key").write_parquet(buffer)
    return buffer.getvalue()


def read_versioned_records(data: bytes | None) -> pl.DataFrame:
    """The stores' records of `versioned_records`' bytes; empty for None or any other
    columns (then nothing is carried: every store is built again)."""
    empty = pl.DataFrame(schema=VERSIONED_RECORDS)
    if data is None:
        return empty
    try:
        frame = pl.read_parquet(io.BytesIO(data))
    except (OSError, pl.exceptions.PolarsError):
        return empty
    return frame if frame.schema == pl.Schema(VERSIONED_RECORDS) else empty


def same_content(old: str | None, new: str) -> bool:
    """Whether two versions hold the same pages (their content parts are equal)."""
    return old is not None and old.partition("-")[0] == new.partition("-")[0]


def chunks(keys: Iterable[str], size: int = 1000) -> list[list[str]]:
    listed = list(keys)
    return [listed[i : i + size] for i in range(0, len(listed), size)]
