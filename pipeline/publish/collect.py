"""What the bucket keeps, and the fenced collection of the rest.
(docs/serving.md, "What the bucket keeps")"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import obstore as obs
from obstore.exceptions import AlreadyExistsError, PreconditionError

from pipeline.errors import BuildError, first_line
from pipeline.publish.bucket import (
    FAILURES,
    POINTER,
    RELEASES,
    Damaged,
    Release,
    chunks,
    get,
    group_of,
    load_release,
    open_bucket,
    put,
)
from pipeline.publish.pointer import Pointer, PointerEntry
from pipeline.settings import GRACE, KEEP

if TYPE_CHECKING:
    from obstore.store import ObjectStore

JOBS = 8  # listings and DeleteObjects in flight at once, unless a publish says (`--jobs`)
Trace = Callable[[str, str], None]  # (step, key): "lease", "uploaded", "pointer", "published"
# The groups (version and release prefixes) to collect, each with its keys as listed, or None
# for a group listed when it is collected.
Doomed = dict[str, list[str] | None]


def collect(
    url: str,
    *,
    keep: int = KEEP,
    grace: float = GRACE,
    jobs: int = JOBS,
    trace: Trace | None = None,
) -> int:
    """Collect the bucket without publishing: what no kept release names, past the grace
    period. The pointer is rewritten (the same release) before anything is deleted, which
    fences off every publish that read it before. The number of objects deleted."""
    store = open_bucket(url)
    run = Collector(store, url, trace or (lambda step, key: None), jobs)
    try:
        return asyncio.run(run.collect_only(keep, grace))
    except FAILURES as exc:
        raise BuildError(f"{url}: {first_line(exc)}") from None


def now() -> datetime:
    return datetime.now(UTC)


def kept_entries(history: list[PointerEntry], keep: int, grace: float) -> list[PointerEntry]:
    """The releases of `history` (newest first) whose versions stay: the last `keep`, and any
    that stopped being current less than `grace` seconds ago."""
    edge = now() - timedelta(seconds=grace)
    return [
        entry
        for i, entry in enumerate(history)
        if i < max(keep, 1) or datetime.fromisoformat(history[i - 1].committed_at) > edge
    ]


class Collector:
    """A bucket's releases, read once each, and its collection."""

    def __init__(self, store: ObjectStore, url: str, trace: Trace, jobs: int = JOBS):
        self.store, self.url, self.trace, self.jobs = store, url, trace, jobs
        self.token = secrets.token_hex(4)  # this run: in its versions, release and lease
        self.releases: dict[str, Release] = {}  # loaded, by release

    async def collect_only(self, keep: int, grace: float) -> int:
        got = await get(self.store, POINTER)
        if got is None:
            return 0
        pointer = Pointer.parse(self.url, got.data)
        doomed = await self._doomed(pointer.history, keep, grace)
        bumped = replace(pointer, collected=self.token, collected_at=now().isoformat())
        try:  # the fence: a publish that read the pointer before this cannot commit
            await put(self.store, POINTER, bumped.to_json(), {"e_tag": got.e_tag})
        except (AlreadyExistsError, PreconditionError):
            raise BuildError(
                f"{self.url}: another publish wrote {POINTER} since this collection read it; "
                "nothing was deleted"
            ) from None
        return await self._collect(doomed, keep, grace)

    async def _release(self, entry: PointerEntry) -> Release:
        name = entry.release
        if name not in self.releases:
            self.releases[name] = await load_release(
                self.store, self.url, entry.document, entry.sha256
            )
        return self.releases[name]

    async def _protected(self, history: list[PointerEntry], keep: int, grace: float) -> set[str]:
        """The prefixes every kept release of `history` names."""
        protected: set[str] = set()
        for entry in kept_entries(history, keep, grace):
            protected |= (await self._release(entry)).prefixes()
        return protected

    async def _doomed(self, history: list[PointerEntry], keep: int, grace: float) -> Doomed:
        """Every group in the bucket that no kept release names and whose newest object is older
        than `grace`, with its keys, listed before the fence. Nothing when a kept release cannot
        be read. (docs/serving.md, "What the bucket keeps")"""
        try:
            protected = await self._protected(history, keep, grace)
        except Damaged:
            return {}
        edge = now() - timedelta(seconds=grace)
        groups: dict[str, tuple[datetime, list[str]]] = {}
        async for batch in obs.list(self.store, None):
            for meta in batch:
                group = group_of(meta["path"])
                if group is None or group in protected:
                    continue
                newest, keys = groups.setdefault(group, (meta["last_modified"], []))
                keys.append(meta["path"])
                groups[group] = (max(newest, meta["last_modified"]), keys)
        return {group: keys for group, (newest, keys) in groups.items() if newest < edge}

    async def collect_dropped(self, keep: int, grace: float) -> int:
        """After a commit, collect the releases the pointer's history no longer keeps; returns
        the objects deleted. A release that cannot be read loses its folder only, and what it
        named is left to `collect`. (docs/serving.md, "What the bucket keeps")"""
        fence = await self._fence(keep, grace)
        if fence is None:
            return 0
        history, protected = fence
        listed = await obs.list_with_delimiter_async(self.store, RELEASES)
        there = {f"{prefix.rstrip('/')}/" for prefix in listed["common_prefixes"]}
        deleted = 0
        for entry in reversed(history):
            folder = f"{RELEASES}{entry.release}/"
            if folder in protected or folder not in there:  # a kept release names its folder
                continue
            try:
                named = (await self._release(entry)).prefixes() - protected - {folder}
            except Damaged:
                named = set()
            deleted += await self._delete({**dict.fromkeys(sorted(named)), folder: None})
        return deleted

    async def _collect(self, doomed: Doomed, keep: int, grace: float) -> int:
        """Delete `doomed`, after reading the pointer again: never a group a release it keeps
        names."""
        fence = await self._fence(keep, grace)
        if fence is None:
            return 0
        _, protected = fence
        return await self._delete({g: keys for g, keys in doomed.items() if g not in protected})

    async def _fence(self, keep: int, grace: float) -> tuple[list[PointerEntry], set[str]] | None:
        """The pointer's history, read again after the write that fences (a commit, or
        `collect`'s rewrite), and the prefixes its kept releases name; None when there is
        nothing to read or a kept release cannot be read: then nothing is deleted."""
        got = await get(self.store, POINTER)
        if got is None:
            return None
        try:
            pointer = Pointer.parse(self.url, got.data)
            return pointer.history, await self._protected(pointer.history, keep, grace)
        except Damaged:
            return None

    async def _delete(self, doomed: Doomed) -> int:
        """Delete every key of `doomed` (a group with no keys is listed first), `jobs`
        requests at a time: the versions, then the release documents naming them."""
        limit = asyncio.Semaphore(self.jobs)

        async def keys_of(group: str) -> list[str]:
            listed = doomed[group]
            if listed is not None:
                return listed
            async with limit:
                return [
                    meta["path"] async for batch in obs.list(self.store, group) for meta in batch
                ]

        async def delete(part: list[str]) -> None:
            async with limit:  # DeleteObjects, 1,000 keys a request
                await obs.delete_async(self.store, part)
            self.trace("deleted", part[-1])

        deleted = 0
        for documents in (False, True):
            groups = [g for g in doomed if g.startswith(RELEASES) == documents]
            keys = sorted(k for got in await asyncio.gather(*map(keys_of, groups)) for k in got)
            await asyncio.gather(*map(delete, chunks(keys)))
            deleted += len(keys)
        return deleted
