"""Publishing a release to an object store (S3; GCS and Azure through the same library) for a
CDN in front of it. A local output directory keeps its atomic releases (`release.py`); a bucket
has no multi-object swap, so it gets a protocol with a commit point of its own:

    PREFIX/v1.39.0/...                  the site: a key is a file's path in the site
    PREFIX/releases/<build_id>/         manifest.parquet (first: what the publish may touch),
                                        manifest.json, changes.json, build_report.json|.html
    PREFIX/current.json                 the release pointer: written last, conditionally
    PREFIX/lease.json                   the publish in progress: one at a time
    PREFIX/abandoned/<id>-<n>.json      a publish that failed or died: the manifest whose pages
                                        it may have written, which the next publish rewrites

The bucket is the truth: a publish diffs against the manifest the pointer names (not a local
release), uploads what differs, then the manifest, changes and report, then the pointer (an
If-Match / If-None-Match put that fails for the loser of two publishes), then deletes what the
old manifest had and the new one lacks. A publish killed at any point is redone by the next.
"""

from __future__ import annotations

import asyncio
import hashlib
import secrets
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import obstore as obs
import orjson
import polars as pl
from obstore.exceptions import AlreadyExistsError, PreconditionError

from pipeline.api.urls import store_of
from pipeline.errors import BuildError, first_line
from pipeline.export.manifest import Manifest, write_changes
from pipeline.export.state import damage
from pipeline.paths import (
    CHANGES,
    MANIFEST,
    MANIFEST_PARQUET,
    RELEASES,
    REPORT_HTML,
    REPORT_JSON,
    SITE,
)
from pipeline.publish.bucket import FAILURES, get, get_manifest, open_bucket, put

if TYPE_CHECKING:
    from obstore.store import ObjectStore

POINTER = "current.json"
LEASE = "lease.json"
ABANDONED = "abandoned/"
LEASE_SECONDS = 3600  # longer than any publish: past it, a lease is taken for a dead one's
JOBS = 64  # uploads in flight at once
Trace = Callable[[str, str], None]  # (step, key): "lease", "uploaded", "pointer", "published"


@dataclass
class Published:
    """What one publish did, and how long readers could see old and new pages side by side."""

    build_id: str
    uploaded: int
    uploaded_bytes: int
    deleted: int
    unchanged: int
    seconds: float
    store_window: float  # the longest one store's (or page group's) changes took to land
    site_window: float  # from the first changed object written to the last removed one deleted


def publish_release(
    release: Path,
    url: str,
    *,
    jobs: int = JOBS,
    take_over: bool = False,
    lease_seconds: int = LEASE_SECONDS,
    trace: Trace | None = None,
) -> Published:
    """Publish the local `release` (a folder of `OUTPUT/releases/`) to the bucket at `url`."""
    problem = damage(release, MANIFEST_PARQUET)
    if problem:
        raise BuildError(f"{problem}; nothing was published")
    store = open_bucket(url)
    run = _Publish(store, url, release, jobs, trace or (lambda step, key: None))
    try:
        return asyncio.run(run.publish(take_over, lease_seconds))
    except FAILURES as exc:
        raise BuildError(f"{url}: {first_line(exc)}") from None


def _group(key: str) -> str:
    """The pages a reader sees together: one store's (any channel), else one folder's."""
    return store_of(key) or key.rpartition("/")[0]


class _Publish:
    def __init__(self, store: ObjectStore, url: str, release: Path, jobs: int, trace: Trace):
        self.store, self.url, self.release, self.jobs, self.trace = store, url, release, jobs, trace
        self.build_id = release.name
        self.prefix = f"{RELEASES}/{self.build_id}/"
        self.token = secrets.token_hex(8)  # this publish, in its lease and its pointer
        self.spans: dict[str, list[float]] = {}  # page group -> [first write, last write]
        self.touched: str | None = None  # the manifest whose pages a failure may leave written

    async def publish(self, take_over: bool, lease_seconds: int) -> Published:
        """Under the lease. A failure leaves what it may have written marked as abandoned,
        then lets the lease go; a kill leaves the lease, which says the same."""
        lease_tag = await self._take_lease(take_over, lease_seconds)
        self.trace("lease", LEASE)
        try:
            published = await self._publish()
        except Exception:
            if self.touched is not None:  # when this fails too, the lease stays: it tells
                await self._mark_abandoned(self.build_id, self.touched)
            await self._drop_lease(lease_tag)
            raise
        await self._drop_lease(lease_tag)
        return published

    async def _publish(self) -> Published:
        started = time.perf_counter()
        manifest = Manifest.load(self.release)
        pointer, pointer_tag = await self._pointer()
        base = Manifest()
        if pointer is not None:
            key, sha256 = pointer["manifest_parquet"], pointer.get("manifest_sha256")
            loaded = await get_manifest(self.store, key, sha256)
            if loaded is None:  # the bucket's truth is unknown: nothing can be diffed
                raise BuildError(
                    f"{self.url}/{key}: missing, or not the manifest {POINTER} names; delete "
                    f"{POINTER} to publish every file again"
                )
            base = loaded
        markers, dirty = await self._abandoned(base)
        upload = (
            pl.concat(
                [
                    manifest.frame.join(base.frame, on=["path", "sha256"], how="anti"),
                    manifest.frame.join(dirty.to_frame(), on="path", how="semi"),
                ]
            )
            .unique("path")
            .sort("path")
        )
        removed = pl.concat([base.frame["path"], dirty]).unique().sort()
        removed = removed.to_frame().join(manifest.frame, on="path", how="anti")["path"]
        sealed = self.release / MANIFEST_PARQUET
        self.touched = self.prefix + MANIFEST_PARQUET  # what a failure from here may leave
        await put(self.store, self.touched, sealed)  # before any page
        await self._upload(upload["path"].to_list())
        await self._release_files(upload["path"], removed)
        new_pointer = {
            "build_id": self.build_id,
            "manifest": self.prefix + MANIFEST,
            "manifest_parquet": self.prefix + MANIFEST_PARQUET,
            "manifest_sha256": hashlib.sha256(sealed.read_bytes()).hexdigest(),
            "previous": pointer["manifest_parquet"] if pointer else None,
            "publish": self.token,
            "published_at": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        self.trace("pointer", POINTER)
        try:  # the commit point
            mode = {"e_tag": pointer_tag} if pointer is not None else "create"
            await put(self.store, POINTER, orjson.dumps(new_pointer), mode)
        except (AlreadyExistsError, PreconditionError):
            raise BuildError(
                f"{self.url}: another publish wrote {POINTER} since this one read it; this "
                f"build ({self.build_id}) was not published"
            ) from None
        self.trace("published", POINTER)
        # From here, what a failure leaves is the previous release's pages not deleted.
        self.touched = pointer["manifest_parquet"] if pointer else None
        await self._delete(removed.to_list())
        if markers:  # accounted for: their pages were rewritten or deleted above
            await obs.delete_async(self.store, markers)
        self.touched = None
        windows = [last - first for first, last in self.spans.values()]
        ends = [t for span in self.spans.values() for t in span]
        return Published(
            build_id=self.build_id,
            uploaded=upload.height,
            uploaded_bytes=int(upload["bytes"].sum()),
            deleted=len(removed),
            unchanged=len(manifest) - upload.height,
            seconds=time.perf_counter() - started,
            store_window=max(windows, default=0.0),
            site_window=max(ends, default=0.0) - min(ends, default=0.0),
        )

    async def _pointer(self) -> tuple[dict[str, Any] | None, str | None]:
        got = await get(self.store, POINTER)
        return (orjson.loads(got[0]), got[1]) if got else (None, None)

    async def _take_lease(self, take_over: bool, seconds: int) -> str | None:
        """Hold the lease, or refuse: a publish that holds an unexpired one is running. A lease
        left by a dead publish is taken over when it expired (or with `take_over`), and what
        that publish may have written is recorded as abandoned first."""
        now = datetime.now(UTC)
        lease = orjson.dumps(
            {
                "build_id": self.build_id,
                "publish": self.token,
                "manifest": self.prefix + MANIFEST_PARQUET,
                "expires": (now + timedelta(seconds=seconds)).isoformat(timespec="seconds"),
            }
        )
        try:
            return await put(self.store, LEASE, lease, "create")
        except AlreadyExistsError:
            pass
        got = await get(self.store, LEASE)
        held = orjson.loads(got[0]) if got else {}
        pointer, _ = await self._pointer()
        if got and pointer and held.get("publish") == pointer.get("publish"):
            # It published, then died before its deletions: they are redone from its previous.
            if pointer.get("previous"):
                await self._mark_abandoned(held["build_id"], pointer["previous"])
        elif got and (take_over or datetime.fromisoformat(held["expires"]) <= now):
            await self._mark_abandoned(held["build_id"], held["manifest"])
        elif got:
            raise BuildError(
                f"{self.url}: another publish is running (build {held['build_id']}, its lease "
                f"expires {held['expires']}); if it is dead, publish again with --take-over"
            )
        try:
            return await put(self.store, LEASE, lease, {"e_tag": got[1]} if got else "create")
        except (AlreadyExistsError, PreconditionError):
            raise BuildError(f"{self.url}: another publish took the lease first") from None

    async def _drop_lease(self, tag: str | None) -> None:
        got = await get(self.store, LEASE)
        if got is not None and got[1] == tag:  # still this publish's: not taken over since
            await obs.delete_async(self.store, LEASE)

    async def _mark_abandoned(self, build_id: str, manifest_key: str) -> None:
        key = f"{ABANDONED}{build_id}-{secrets.token_hex(4)}.json"
        await put(self.store, key, orjson.dumps({"build_id": build_id, "manifest": manifest_key}))

    async def _abandoned(self, base: Manifest) -> tuple[list[str], pl.Series]:
        """The abandoned markers, and the paths their publishes may have written with other
        bytes than `base` has: each is uploaded again, or deleted."""
        markers = [m["path"] for batch in obs.list(self.store, ABANDONED) for m in batch]
        dirty = [pl.Series("path", [], pl.String)]
        for key in markers:
            got = await get(self.store, key)
            manifest_key = orjson.loads(got[0])["manifest"] if got else None
            # None: it died before any page (its manifest is written before the first)
            touched = await get_manifest(self.store, manifest_key, None) if manifest_key else None
            if touched is not None:
                changed, _ = touched.changes(base)
                dirty.append(changed)
        return markers, pl.concat(dirty).unique()

    def _mark(self, key: str, first: float, last: float) -> None:
        span = self.spans.setdefault(_group(key), [first, last])
        span[0], span[1] = min(span[0], first), max(span[1], last)

    async def _upload(self, keys: list[str]) -> None:
        """Upload the site's files under `keys`, `jobs` at a time (obstore retries each)."""
        site, pending = self.release / SITE, iter(keys)

        async def worker(todo: Iterator[str]) -> None:
            for key in todo:  # shared: each worker takes the next key
                first = time.perf_counter()
                await put(self.store, key, site / key)
                self._mark(key, first, time.perf_counter())
                self.trace("uploaded", key)

        await asyncio.gather(*(worker(pending) for _ in range(self.jobs)))

    async def _release_files(self, changed: pl.Series, removed: pl.Series) -> None:
        """The manifest and report, and the changes this publish makes to the bucket (what a
        CDN purges), under `releases/<build_id>/`."""
        with tempfile.TemporaryDirectory() as tmp:
            write_changes(Path(tmp) / CHANGES, changed, removed)
            await put(self.store, self.prefix + CHANGES, Path(tmp) / CHANGES)
        for name in (MANIFEST, REPORT_JSON, REPORT_HTML):
            if (self.release / name).is_file():
                await put(self.store, self.prefix + name, self.release / name)

    async def _delete(self, keys: list[str]) -> None:
        first = time.perf_counter()
        if keys:
            await obs.delete_async(self.store, keys)  # DeleteObjects, 1,000 keys a request
        for key in keys:
            self._mark(key, first, time.perf_counter())
