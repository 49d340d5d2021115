"""Publishing a release to an object store (S3; GCS and Azure by the same library): the lease
and the upload of the versions the release lacks; `commit.py` commits.
(docs/serving.md, "The bucket's commit protocol")"""

from __future__ import annotations

import asyncio
import tempfile
import time
from dataclasses import dataclass, replace
from datetime import timedelta
from pathlib import Path

import obstore as obs
import polars as pl
from obstore.exceptions import AlreadyExistsError, PreconditionError

from pipeline.errors import BuildError, first_line
from pipeline.export.records.manifest import Manifest, write_changes
from pipeline.export.records.state import sealed_file_problem
from pipeline.paths import CHANGES, MANIFEST_PARQUET, SITE
from pipeline.publish.bucket import (
    COMMON,
    FAILURES,
    LEASE,
    RELEASES,
    Release,
    get,
    group_of,
    open_bucket,
    put,
    put_files,
    same_content,
    sha256,
    versions,
)
from pipeline.publish.collect import Trace, now
from pipeline.publish.commit import Committer
from pipeline.publish.manifests import (
    PART,
    PARTS_LIST,
    changes_of,
    common_part,
    get_list,
    get_rows,
    list_bytes,
    put_bodies,
    release_parts,
    sha256_of,
    store_part,
    version_parts,
)
from pipeline.publish.pointer import Lease
from pipeline.publish.release import built_before
from pipeline.settings import GRACE, KEEP, LEASE_SECONDS, PUBLISH_JOBS


@dataclass
class Published:
    """What one publish did."""

    build_id: str
    release: str
    uploaded: int  # site objects written
    uploaded_bytes: int
    unchanged: int  # site files whose version the bucket already had
    stores_new: int  # stores given a new version
    deleted: int  # objects collected after the commit
    seconds: float
    repaired: int = 0  # versions reused but damaged in the bucket, uploaded again


def publish_release(
    release: Path,
    url: str,
    *,
    jobs: int = PUBLISH_JOBS,
    take_over: bool = False,
    allow_older: bool = False,
    lease_seconds: int = LEASE_SECONDS,
    keep: int = KEEP,
    grace: float = GRACE,
    trace: Trace | None = None,
) -> Published:
    """Publish the local `release` (a folder of `OUTPUT/releases/`) to the bucket at `url`;
    over the release of a newer build (`built_before`) only with `allow_older`."""
    problem = sealed_file_problem(release, MANIFEST_PARQUET)
    if problem:
        raise BuildError(f"{problem}; nothing was published")
    store = open_bucket(url)
    run = _Publish(store, url, trace or (lambda step, key: None), jobs)
    run.allow_older = allow_older
    try:
        return asyncio.run(run.publish(release, jobs, take_over, lease_seconds, keep, grace))
    except FAILURES as exc:
        raise BuildError(f"{url}: {first_line(exc)}") from None


class _Publish(Committer):
    allow_older = False  # replace the release of a newer build

    async def publish(
        self, release: Path, jobs: int, take_over: bool, lease_seconds: int, keep: int, grace: float
    ) -> Published:
        lease_tag = await self._take_lease(release.name, take_over, lease_seconds)
        self.trace("lease", LEASE)
        try:
            return await self._publish(release, jobs, take_over, keep, grace)
        finally:
            await self._drop_lease(lease_tag)

    async def _publish(
        self, local: Path, jobs: int, take_over: bool, keep: int, grace: float
    ) -> Published:
        started = time.perf_counter()
        manifest = Manifest.load(local)
        pointer, pointer_tag = await self._pointer(take_over)
        if (
            pointer is not None
            and not self.allow_older
            and built_before(local.name, pointer.build_id)
        ):
            raise BuildError(
                f"{self.url}: the bucket's release is of build {pointer.build_id}, newer than "
                f"this build ({local.name}); nothing was published (to replace it with an "
                "older build, publish again with --allow-older)"
            )
        previous = await self._current(pointer, pointer_tag, take_over)
        # The release read's list of manifest parts: a version is reused only with its part.
        listed = await get_list(self.store, previous) if previous is not None else None
        listed = listed or {}
        own, own_common = versions(manifest, self.token)
        stores, common = dict(own), own_common
        if previous is not None:  # unchanged pages keep their version: nothing to write
            for key, version in stores.items():
                old = previous.stores.get(key)
                if same_content(old, version) and store_part(key, old or "") in listed:
                    stores[key] = previous.stores[key]
            if same_content(previous.common, common) and common_part(previous.common) in listed:
                common = previous.common
        release_id = f"{local.name}.{self.token}"
        manifest_key = f"{RELEASES}{release_id}/{PARTS_LIST}"
        new = Release(release_id, local.name, common, stores, manifest_key, "")
        existing = previous.prefixes() if previous is not None else set()
        damaged = await self._damaged_versions(new, manifest, existing)
        for group in damaged:  # uploaded again, as a version of this publish's own
            if group.startswith(COMMON):
                common = own_common
            else:
                stores[group.split("/")[1]] = own[group.split("/")[1]]
        new = Release(release_id, local.name, common, stores, manifest_key, "")
        keys = [new.key(p) for p in manifest.frame["path"]]
        fresh = [group_of(k or "") not in existing for k in keys]
        upload = manifest.frame.with_columns(key=pl.Series(keys, dtype=pl.String)).filter(
            pl.Series(fresh, dtype=pl.Boolean)
        )
        written = version_parts(manifest, new, existing)
        parts = {**listed, **{k: sha256_of(b) for k, b in written.items()}}
        store_shas = {k: parts[store_part(k, v)] for k, v in stores.items()}
        common_sha = parts[common_part(common)]
        named = release_parts(new, store_shas, common_sha)
        listing = list_bytes(named)
        new = replace(new, manifest_sha256=sha256(listing), common_part_sha256=common_sha.hex())
        await self._upload(local / SITE, upload.select("path", "key").rows(), jobs)
        await put_bodies(self.store, written, jobs)
        # The changes since the pointer's release: the rows of its versions this release does
        # not name again, read from their parts, against the rows of the versions uploaded.
        dropped = [(k, d) for k, d in listed.items() if k not in named]
        base = await get_rows(self.store, dropped) or Manifest()
        with tempfile.TemporaryDirectory() as tmp:
            write_changes(Path(tmp) / CHANGES, *changes_of(upload, manifest, base))
            changes = Path(tmp) / CHANGES
            deleted = await self.commit(
                local, new, changes, pointer, pointer_tag, keep, grace, listing, store_shas
            )
        return Published(
            build_id=local.name,
            release=release_id,
            uploaded=upload.height,
            uploaded_bytes=int(upload["bytes"].sum()),
            unchanged=len(manifest) - upload.height,
            stores_new=sum(1 for v in stores.values() if v.endswith("-" + self.token)),
            deleted=deleted,
            seconds=time.perf_counter() - started,
            repaired=len(damaged),
        )

    async def _damaged_versions(
        self, new: Release, manifest: Manifest, existing: set[str]
    ) -> set[str]:
        """The versions `new` reuses (named by the release read, in `existing`) whose objects
        in the bucket are not the manifest's files: one listing of each such version (its
        keys and sizes), `jobs` at a time; a version missing an object, holding another, or
        one of another size (overwritten) is damaged."""
        expected: dict[str, dict[str, int | None]] = {}
        for path, size in manifest.frame.select("path", "bytes").iter_rows():
            key = new.key(path) or ""
            group = group_of(key)
            if group in existing:
                expected.setdefault(group, {group + PART: None})[key] = size
        limit = asyncio.Semaphore(self.jobs)

        async def listed(group: str) -> dict[str, int]:
            async with limit:
                return {
                    meta["path"]: meta["size"]
                    async for batch in obs.list(self.store, group)
                    for meta in batch
                }

        def whole(there: dict[str, int], files: dict[str, int | None]) -> bool:
            """Every object of the version, of its size (its part: there, of any size)."""
            return there.keys() == files.keys() and all(
                n is None or there[k] == n for k, n in files.items()
            )

        found = await asyncio.gather(*map(listed, expected))
        return {
            g for g, there in zip(expected, found, strict=True) if not whole(there, expected[g])
        }

    async def _take_lease(self, build_id: str, take_over: bool, seconds: int) -> str | None:
        """Hold the lease, or refuse while another publish holds an unexpired one: it saves
        two publishes doing the same work; the commit alone decides what goes live."""
        started = now()
        lease = Lease(
            build_id=build_id,
            publish=self.token,
            expires=(started + timedelta(seconds=seconds)).isoformat(timespec="seconds"),
        ).to_json()
        try:
            return await put(self.store, LEASE, lease, "create")
        except AlreadyExistsError:
            pass
        got = await get(self.store, LEASE)
        if got is not None and not take_over:
            held = Lease.parse(self.url, got.data)
            if held.expires_at > started:
                raise BuildError(
                    f"{self.url}: another publish is running (build {held.build_id}, its lease "
                    f"expires {held.expires}); if it is dead, publish again with --take-over"
                )
        try:
            return await put(self.store, LEASE, lease, {"e_tag": got.e_tag} if got else "create")
        except (AlreadyExistsError, PreconditionError):
            raise BuildError(f"{self.url}: another publish took the lease first") from None

    async def _drop_lease(self, tag: str | None) -> None:
        try:
            got = await get(self.store, LEASE)
            if got is not None and got.e_tag == tag:  # still this publish's: not taken over since
                await obs.delete_async(self.store, LEASE)
        except FAILURES:  # advisory: it expires
            pass

    async def _upload(self, site: Path, files: list[tuple[str, str]], jobs: int) -> None:
        """Upload the site's files (path, key), `jobs` at a time (obstore retries each)."""
        await put_files(self.store, site, files, jobs, lambda key: self.trace("uploaded", key))
