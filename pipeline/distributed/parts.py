"""The bucket's part in a Ray night: what a shard task uploads, the driver's common pages, and
the driver's download of the parts. The shards share nothing with the driver or each other
but the bucket (docs/cluster.md, "How a night runs" and "Retries")."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import obstore as obs
import orjson
import polars as pl
import pyarrow as pa  # type: ignore[import-untyped]  # no stubs

from pipeline.api.urls import store_column
from pipeline.distributed.shards import shard_of
from pipeline.errors import BuildError, first_line
from pipeline.export.records.digests import StoreRecord, TableSums
from pipeline.export.records.manifest import Manifest
from pipeline.paths import MANIFEST_PARQUET, STORES
from pipeline.publish.bucket import (
    BUILDS,
    COMMON,
    FAILURES,
    VERSIONED_RECORDS,
    Release,
    content_versions,
    open_bucket,
    put_files,
    same_content,
)
from pipeline.publish.manifests import common_part, part_bytes, store_part

if TYPE_CHECKING:
    from obstore.store import ObjectStore

JOBS = 64  # a task's uploads in flight at once
DOWNLOAD_CHUNK = 8 * 1024 * 1024  # bytes a part is streamed to disk by


@dataclass(frozen=True)
class BucketShard:
    """What a shard task of a night straight to a bucket gets beside its rows: where to write,
    the night's token, and its own stores' records at the night's start (`VERSIONED_RECORDS`,
    as Arrow: O(its stores), never the whole manifest)."""

    url: str
    build: str  # <build_id>.<token>: the night's folder under builds/
    token: str
    previous: pa.Table
    inputs: str  # the digest of what the shard is handed (`reuse.shard_inputs`)

    def parts(self, index: int, attempt: str) -> str:
        """The prefix of one attempt's parts."""
        return f"{BUILDS}{self.build}/shard-{index}-{attempt}/"


def records_by_shard(records: pl.DataFrame, shards: int) -> list[pa.Table]:
    """The night's start records cut into each shard's stores' (`shard_of` their key)."""
    keys = records["store_key"].to_list()
    of = pl.Series([shard_of(k, shards) for k in keys], dtype=pl.Int64)
    return [records.filter(of == i).to_arrow() for i in range(shards)]


SHARD_DOC = "shard.json"  # among an attempt's parts: its `ShardDoc`


@dataclass(frozen=True)
class ShardDoc:
    """What an attempt's parts were built from (`inputs`, the digest its task was handed), and
    what a later night that names them again reports in the task's place: the listings' rows
    the shard held (`sums`) and its stores' steps' rows."""

    inputs: str
    sums: TableSums
    steps: tuple[tuple[str, int], ...]

    def to_json(self) -> bytes:
        # The sums as text: their total is a HUGEINT, past JSON's integers.
        sums = [str(v) for v in self.sums]
        return orjson.dumps({"inputs": self.inputs, "sums": sums, "steps": self.steps})

    @classmethod
    def parse(cls, data: bytes) -> ShardDoc | None:
        """The document in `data`; None for anything else (then the shard is built again)."""
        try:
            doc = orjson.loads(data)
            n, xor, total = (int(v) for v in doc["sums"])
            steps = tuple((str(name), int(rows)) for name, rows in doc["steps"])
            return cls(str(doc["inputs"]), (n, xor, total), steps)
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
            return None


@dataclass(frozen=True)
class Uploaded:
    """What a shard attempt wrote to the bucket."""

    parts: str  # its parts' prefix
    stores_new: int  # stores given a new version
    puts: int  # objects written: pages and parts
    bytes: int


def publish_shard(
    job: BucketShard,
    index: int,
    attempt: str,
    folder: Path,
    manifest: Manifest,
    stores: dict[str, StoreRecord],
    tables: Sequence[str],
    doc: ShardDoc,
) -> Uploaded:
    """Upload the shard's new store versions, each with its manifest part, then its parts,
    `doc` among them; return when every upload finished. A store rendered again with the
    same content keeps its version (and its part)."""
    before = pl.from_arrow(job.previous)
    assert isinstance(before, pl.DataFrame)
    previous = dict(before.select("store_key", "version").iter_rows())
    previous_parts = dict(before.select("store_key", "part_sha256").iter_rows())
    contents, _ = content_versions(manifest)
    tag = f"{job.token}{attempt}"
    versions: dict[str, str] = {}
    shas: dict[str, bytes] = {}
    fresh: set[str] = set()
    for key in stores:
        old, part = previous.get(key), previous_parts.get(key)
        if key not in contents:  # carried by its record (or a store without pages)
            if old and part is not None:
                versions[key], shas[key] = old, part
            continue
        if old is not None and part is not None and same_content(old, contents[key]):
            versions[key], shas[key] = old, part
        else:
            versions[key] = f"{contents[key]}-{tag}"
            fresh.add(key)
    naming = Release("", "", "", versions, "", "")
    frame = manifest.frame.with_columns(store=store_column(pl.col("path")))
    upload = frame.filter(pl.col("store").is_in(list(fresh)))
    pages = [(p, naming.key(p) or "") for p in upload["path"]]
    (folder / VERSION_PARTS).mkdir()
    files = [(f"site/{p}", k) for p, k in pages]
    for n, ((key,), rows) in enumerate(upload.partition_by("store", as_dict=True).items()):
        body = part_bytes(rows)
        shas[str(key)] = hashlib.sha256(body).digest()
        (folder / VERSION_PARTS / f"{n}.parquet").write_bytes(body)
        files.append((f"{VERSION_PARTS}/{n}.parquet", store_part(str(key), versions[str(key)])))
    parts = job.parts(index, attempt)
    _write_parts(folder, manifest, stores, versions, shas)
    (folder / SHARD_DOC).write_bytes(doc.to_json())
    names = [MANIFEST_PARQUET, STORES, SHARD_DOC, *(f"{t}.parquet" for t in tables)]
    files += [(n, parts + n) for n in names]
    store = open_bucket(job.url)
    try:
        asyncio.run(put_files(store, folder, files, JOBS))
    except FAILURES as exc:  # past obstore's retries: the night fails, the pointer stays
        raise BuildError(f"{job.url}: shard {index}: {first_line(exc)}") from None
    part_bytes_total = sum((folder / n).stat().st_size for n in names)
    part_bytes_total += sum(f.stat().st_size for f in (folder / VERSION_PARTS).iterdir())
    return Uploaded(
        parts,
        len(fresh),
        len(files),
        int(upload["bytes"].sum()) + part_bytes_total,
    )


VERSION_PARTS = "version-parts"  # in a shard's folder: its new versions' manifest parts


@dataclass(frozen=True)
class Common:
    """The common pages' version of a night, its manifest part's SHA-256, and what uploading
    them took."""

    version: str
    part_sha256: bytes
    puts: int
    bytes: int


def publish_common(
    url: str, token: str, previous: Release | None, folder: Path, site: Manifest
) -> Common:
    """The driver's side: the pages common to all stores (written under `folder/site`), their
    version kept when their content equals the one at the night's start (`previous`'s; no
    request), else a new one, `<content>-<token>`, uploaded with its manifest part; returns
    when every upload finished."""
    _, content = content_versions(site)
    if (
        previous is not None
        and previous.common_part_sha256
        and same_content(previous.common, content)
    ):
        return Common(previous.common, bytes.fromhex(previous.common_part_sha256), 0, 0)
    version = f"{content}-{token}"
    naming = Release("", "", version, {}, "", "")
    body = part_bytes(site.frame)
    (folder / VERSION_PARTS).mkdir()
    (folder / VERSION_PARTS / "common.parquet").write_bytes(body)
    files = [(f"site/{p}", naming.key(p) or "") for p in site.frame["path"]]
    files.append((f"{VERSION_PARTS}/common.parquet", common_part(version)))
    try:
        asyncio.run(put_files(open_bucket(url), folder, files, JOBS))
    except FAILURES as exc:  # past obstore's retries: the night fails, the pointer stays
        raise BuildError(f"{url}: the common pages: {first_line(exc)}") from None
    sha = hashlib.sha256(body).digest()
    return Common(version, sha, len(files), int(site.frame["bytes"].sum()) + len(body))


def common_file(url: str, version: str | None, path: str) -> bytes | None:
    """The file at site `path` of the common version `version` (the night's start's), read
    from the bucket; None without a version, or when it has no such object."""
    if version is None:
        return None
    try:
        return bytes(obs.get(open_bucket(url), f"{COMMON}{version}/{path}").bytes())
    except FileNotFoundError:
        return None
    except FAILURES as exc:
        raise BuildError(f"{url}: {first_line(exc)}; nothing was published") from None


def _write_parts(
    folder: Path,
    manifest: Manifest,
    stores: dict[str, StoreRecord],
    versions: dict[str, str],
    shas: dict[str, bytes],
) -> None:
    """The attempt's manifest rows and its stores' records with their versions and their
    manifest parts' SHA-256s, as Parquet."""
    manifest.frame.write_parquet(folder / MANIFEST_PARQUET, statistics=False)
    rows = [
        (key, r.digest, r.channels, r.products, r.pages, versions.get(key), shas.get(key))
        for key, r in sorted(stores.items())
    ]
    pl.DataFrame(rows, schema=VERSIONED_RECORDS, orient="row").write_parquet(folder / STORES)


def fetch_parts(url: str, prefix: str, names: Sequence[str], folder: Path) -> int:
    """An attempt's parts (`names` under `prefix`) into `folder`, each streamed to disk; the
    bytes downloaded."""
    store = open_bucket(url)
    folder.mkdir(parents=True)
    for name in names:
        _download(store, prefix + name, folder / name)
    return sum((folder / name).stat().st_size for name in names)


def _download(store: ObjectStore, key: str, target: Path) -> None:
    try:
        got = obs.get(store, key)
        with target.open("wb") as fh:
            for chunk in got.stream(min_chunk_size=DOWNLOAD_CHUNK):
                fh.write(memoryview(chunk))
    except FileNotFoundError:
        raise BuildError(f"{key}: missing from the bucket; nothing was published") from None
    except FAILURES as exc:
        raise BuildError(f"{key}: {first_line(exc)}; nothing was published") from None


def read_records(parts: Sequence[Path]) -> pl.DataFrame:
    """Every shard's stores' records with their versions (`VERSIONED_RECORDS`)."""
    frames = [pl.read_parquet(p / STORES) for p in parts]
    return pl.concat(frames) if frames else pl.DataFrame(schema=VERSIONED_RECORDS)
