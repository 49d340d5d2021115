"""The checks every bucket test makes (tests/publish, tests/distributed): what the pointer
names is whole, with the right bytes, read by a reader resolving through the pointer; and what
a collection past the grace period leaves."""

from __future__ import annotations

import hashlib
import io
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import obstore as obs
import orjson
import polars as pl

from pipeline.api.urls import BULK_DIR
from pipeline.export.records.manifest import Manifest
from pipeline.publish.bucket import POINTER, group_of, open_bucket
from pipeline.publish.collect import kept_entries
from pipeline.publish.pointer import Pointer
from pipeline.serve.reader import BucketReader

if TYPE_CHECKING:
    from obstore.store import ObjectStore

# The export settings of the bucket tests that publish and check a site many times (each file
# is a PUT of every publish and a GET of every check): channel 0's default pages and, of the
# common pages, the groups' prices alone (a store's prices move them); no bulk file.
FEW_PAGES = {
    "channels": [0],
    "variants": [],
    "catalog_operations": ["Pricing_GetGroupPrices"],
    "bulk_files": False,
}


def url_of(path: str) -> str:
    """The canonical URL of a site file (`pipeline.api.urls`'s mapping, read backwards)."""
    if path.endswith("/help/index.html"):
        return "/" + path.removesuffix(".html")
    if path.endswith("/help/openapi.json") or path.startswith(f"{BULK_DIR}/"):
        return "/" + path  # the OpenAPI document and the bulk files: their path
    folder, _, name = path.removesuffix(".json").rpartition("/")
    return f"/{folder}" if name == "index" else f"/{folder}?{name}"


@dataclass(frozen=True)
class Build:
    """A local release: its manifest (path -> sha256) and its site."""

    release: Path
    files: dict[str, bytes]

    @classmethod
    def of(cls, release: Path) -> Build:
        return cls(release, Manifest.load(release).hashes_under("v1.39.0"))


# One store a bucket and endpoint for the checks of a process: a test checks its bucket after
# every step, and opening a store (obstore's `from_url`) took a third of a check's time. Each
# check still reads through a reader of its own (the pointer, the release, its manifest and
# every file, read afresh).
_STORES: dict[tuple[str, tuple[tuple[str, str], ...]], ObjectStore] = {}


def store_of(url: str) -> ObjectStore:
    """The store `open_bucket(url)` opens, under this process's AWS_* settings, opened once."""
    aws = tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith("AWS_")))
    store = _STORES.get((url, aws))
    if store is None:
        store = _STORES[url, aws] = open_bucket(url)
    return store


def check_bucket(url: str, builds: dict[str, Build]) -> str | None:
    """The pointer names a whole release of one of `builds`: every file of its manifest, read
    through the pointer by its canonical URL, is that build's bytes (never another's). Its
    build id; None before the first commit."""
    reader = BucketReader(url, store_of(url))
    release = reader.snapshot()
    if release is None:
        return None
    build = builds[release.build_id]
    paths = list(build.files)
    bodies = reader.read(release, [url_of(p) for p in paths])
    for path, body in zip(paths, bodies, strict=True):
        assert body is not None, (release.release, path)
        assert hashlib.sha256(body).digest() == build.files[path], (release.release, path)
    # Every store of the build, and no other, is in the map.
    stores = {p.split("/")[2] for p in paths if p.startswith("v1.39.0/stores/")}
    assert set(release.stores) == stores
    return release.build_id


def manifest_of_parts(url: str, release: str) -> pl.DataFrame:
    """The rows of every manifest part the release's list names (each checked against the
    SHA-256 the list gives it), read straight from the bucket, sorted by path."""
    store = store_of(url)
    document = orjson.loads(bytes(obs.get(store, f"releases/{release}/release.json").bytes()))
    listed = pl.read_parquet(io.BytesIO(bytes(obs.get(store, document["manifest"]).bytes())))
    frames = []
    for key, digest in listed.select("key", "sha256").iter_rows():
        assert key.endswith("/_manifest.parquet"), key
        body = bytes(obs.get(store, key).bytes())
        assert hashlib.sha256(body).digest() == digest, key
        frames.append(pl.read_parquet(io.BytesIO(body)))
    return pl.concat(frames).sort("path")


def bucket_keys(url: str) -> list[str]:
    return [m["path"] for batch in obs.list(store_of(url)) for m in batch]


def pointer(url: str) -> dict[str, object]:
    return dict(orjson.loads(bytes(obs.get(store_of(url), POINTER).bytes())))


def only_kept_left(url: str, keep: int) -> None:
    """After a collection past the grace period: the bucket holds the kept releases' versions
    and documents, the pointer and nothing else (a lease, if a publish was killed holding it)."""
    reader = BucketReader(url, store_of(url))
    raw = bytes(obs.get(store_of(url), POINTER).bytes())
    current = Pointer.parse(url, raw)
    assert current.to_json() == raw  # read and written again, the same bytes
    named: set[str] = set()
    for entry in kept_entries(current.history, keep, 0):
        named |= reader.release_at(entry).prefixes()
    keys = bucket_keys(url)
    groups = {group_of(k) for k in keys} - {None}
    assert groups == named
    assert {k for k in keys if group_of(k) is None} <= {POINTER, "lease.json"}
