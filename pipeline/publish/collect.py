"""What the bucket keeps, and the fenced collection of the rest (see `objectstore.py`): the
versions and release documents that no kept release names (the last `keep` releases, and any
that stopped being current less than `grace` seconds ago), in groups whose newest object is
older than `grace`. They are listed before a commit (a publish's, or a rewrite of the same
pointer by `collect`) and deleted after it, once the pointer was read again: what a publish
that read the pointer before the commit may name can no longer be committed."""

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

if TYPE_CHECKING:
    from obstore.store import ObjectStore

KEEP = 2  # releases whose versions are kept: the current one and the one before
GRACE = 3600  # seconds a release stays after it stopped being current, and a leftover's age
Trace = Callable[[str, str], None]  # (step, key): "lease", "uploaded", "pointer", "published"


def collect(url: str, *, keep: int = KEEP, grace: float = GRACE, trace: Trace | None = None) -> int:
    """Collect the bucket without publishing: what no kept release names, past the grace
    period. The pointer is rewritten (the same release) before anything is deleted, which
    fences off every publish that read it before. The number of objects deleted."""
    store = open_bucket(url)
    run = Collector(store, url, trace or (lambda step, key: None))
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

    def __init__(self, store: ObjectStore, url: str, trace: Trace):
        self.store, self.url, self.trace = store, url, trace
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

    async def _doomed(self, history: list[PointerEntry], keep: int, grace: float) -> list[str]:
        """The objects no kept release names, in versions and releases whose newest object is
        older than `grace`: listed before the commit (see the module's docstring). Nothing
        when a kept release cannot be read."""
        try:
            protected = await self._protected(history, keep, grace)
        except Damaged:
            return []
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
        return sorted(k for newest, keys in groups.values() if newest < edge for k in keys)

    async def _collect(self, doomed: list[str], keep: int, grace: float) -> int:
        """Delete `doomed`, after reading the pointer again: never what it keeps."""
        if not doomed:
            return 0
        got = await get(self.store, POINTER)
        try:
            pointer = Pointer.parse(self.url, got.data) if got else None
            protected = await self._protected(pointer.history, keep, grace) if pointer else None
        except Damaged:
            protected = None
        if protected is None:
            return 0
        doomed = [k for k in doomed if group_of(k) not in protected]
        for part in chunks(doomed):  # DeleteObjects, 1,000 keys a request
            await obs.delete_async(self.store, part)
            self.trace("deleted", part[-1])
        return len(doomed)
