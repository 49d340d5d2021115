"""The commit of a release to an object store, shared by `pipeline publish` and a Ray night.
(docs/serving.md, "The bucket's commit protocol")"""

from __future__ import annotations

import asyncio
import shutil
from dataclasses import dataclass
from pathlib import Path

import orjson
import polars as pl
from obstore.exceptions import AlreadyExistsError, PreconditionError

from pipeline.errors import BuildError, first_line
from pipeline.paths import (
    BUCKET_RELEASE,
    CHANGES,
    CURRENT,
    REPORT_HTML,
    REPORT_JSON,
    STORES,
    published_release,
    set_aside,
)
from pipeline.paths import RELEASES as RELEASES_DIR
from pipeline.publish.bucket import (
    FAILURES,
    POINTER,
    RELEASE_DOC,
    RELEASES,
    Damaged,
    Release,
    get,
    open_bucket,
    put,
    read_versioned_records,
    release_documents,
    sha256,
    versioned_records,
)
from pipeline.publish.collect import Collector, now
from pipeline.publish.pointer import Pointer, PointerEntry, read_pointer
from pipeline.publish.release import awaits_local_swap, built_before, publish
from pipeline.settings import GRACE, KEEP

HISTORY = 100  # releases the pointer remembers, newest first


class Committer(Collector):
    """A bucket's committed state read, and a release committed to it."""

    async def commit(
        self,
        local: Path,
        new: Release,
        changes: Path,
        pointer: Pointer | None,
        pointer_tag: str | None,
        keep: int,
        grace: float,
        listing: bytes,
        parts: dict[str, bytes],
    ) -> int:
        """Everything after the versions are in the bucket: the release's files and documents
        (`listing`, its list of manifest parts; `parts`, each store's part's SHA-256), the
        commit (If-Match `pointer_tag`), then the fenced collection. Returns the number of
        objects collected. (docs/serving.md, "The bucket's commit protocol")"""
        await self._release_files(local, new, changes, listing, parts)
        entry = PointerEntry(
            release=new.release,
            document=f"{RELEASES}{new.release}/{RELEASE_DOC}",
            sha256=sha256(release_documents(new)[-1][1]),
            committed_at=now().isoformat(),
        )
        history = [entry, *(pointer.history if pointer else [])][:HISTORY]
        self.releases[new.release] = new
        new_pointer = Pointer(
            release=entry.release,
            document=entry.document,
            sha256=entry.sha256,
            committed_at=entry.committed_at,
            build_id=new.build_id,
            publish=self.token,
            history=history,
        )
        self.trace("pointer", POINTER)
        try:  # the commit
            mode = {"e_tag": pointer_tag} if pointer_tag is not None else "create"
            await put(self.store, POINTER, new_pointer.to_json(), mode)
        except (AlreadyExistsError, PreconditionError):
            raise BuildError(
                f"{self.url}: another publish wrote {POINTER} since this one read it; this "
                f"build ({new.build_id}) was not published (what it wrote is collected later)"
            ) from None
        self.trace("published", POINTER)
        return await self.collect_dropped(keep, grace)

    async def _pointer(self, take_over: bool) -> tuple[Pointer | None, str | None]:
        """The pointer and its ETag. A damaged one is refused, or with `take_over` replaced
        (If-Match its ETag) as if the bucket had no release."""
        try:
            return await read_pointer(self.store, self.url)
        except Damaged:
            if not take_over:
                raise
            got = await get(self.store, POINTER)
            return None, got.e_tag if got else None

    async def _current(
        self, pointer: Pointer | None, pointer_tag: str | None, take_over: bool
    ) -> Release | None:
        """The release `pointer` (read with ETag `pointer_tag`) names. One that cannot be read
        is refused as damaged, or with `take_over` taken as none; but when the pointer moved
        meanwhile (another publish committed and collected it), the bucket is whole: that is
        said, and nothing is published."""
        if pointer is None:
            return None
        try:
            return await self._release(pointer.entry)
        except Damaged:
            if take_over:
                return None
            got = await get(self.store, POINTER)
            if got is not None and got.e_tag != pointer_tag:
                raise BuildError(
                    f"{self.url}: {POINTER} moved while this publish read the release it named "
                    f"({pointer.release}: another publish committed since, and collected it); "
                    "the bucket is whole and nothing was published: publish again"
                ) from None
            raise

    async def _release_files(
        self, local: Path, new: Release, changes: Path, listing: bytes, parts: dict[str, bytes]
    ) -> None:
        """The list of manifest parts (`listing`), the stores' records with their versions and
        their parts' SHA-256s (what the next night carries), the report, the changes
        (`changes`), then the map's parts and the release document, under releases/<id>/.
        The local manifest, every file's row, is not uploaded: its parts are the versions'."""
        prefix = f"{RELEASES}{new.release}/"
        await put(self.store, new.manifest, listing)
        records = versioned_records(local / STORES, new.stores, parts)
        await put(self.store, prefix + STORES, records)
        await put(self.store, prefix + CHANGES, changes)
        for name in (REPORT_JSON, REPORT_HTML):
            if (local / name).is_file():
                await put(self.store, prefix + name, local / name)
        for key, body in release_documents(new):  # the document last: it names the parts
            await put(self.store, key, body)


@dataclass
class NightStart:
    """What a Ray night straight to a bucket read at its start: the pointer and its ETag (the
    fence of its commit), the release it names, and that release's store records with their
    versions (`read_versioned_records`; none from a release without them: nothing is carried)."""

    url: str
    token: str  # the night's: in its release, its build's parts and its versions
    pointer: Pointer | None
    pointer_tag: str | None
    current: Release | None
    records: pl.DataFrame


def start_night(url: str, *, take_over: bool = False) -> NightStart:
    """Read the bucket's committed state at the start of a night (see `NightStart`)."""
    run = Committer(open_bucket(url), url, lambda step, key: None)

    async def read() -> NightStart:
        pointer, tag = await run._pointer(take_over)
        current = await run._current(pointer, tag, take_over)
        got = None
        if current is not None:
            got = await get(run.store, f"{RELEASES}{current.release}/{STORES}")
        records = read_versioned_records(got.data if got is not None else None)
        return NightStart(url, run.token, pointer, tag, current, records)

    try:
        return asyncio.run(read())
    except FAILURES as exc:
        raise BuildError(f"{url}: {first_line(exc)}") from None


def commit_night(
    start: NightStart,
    local: Path,
    new: Release,
    listing: bytes,
    parts: dict[str, bytes],
    *,
    keep: int = KEEP,
    grace: float = GRACE,
) -> list[str]:
    """Commit a Ray night's sealed release `local`, fenced by the pointer's ETag read at its
    start; a failed collection is returned, for the log. (docs/cluster.md, "A night's commit")"""
    steps: list[str] = []
    run = Committer(open_bucket(start.url), start.url, lambda step, key: steps.append(step))
    run.token = start.token
    (local / BUCKET_RELEASE).write_bytes(orjson.dumps({"url": start.url, "release": new.release}))
    unchanged = f"the output's {CURRENT} is unchanged"
    uncertain = False
    try:
        asyncio.run(
            run.commit(
                local,
                new,
                local / CHANGES,
                start.pointer,
                start.pointer_tag,
                keep,
                grace,
                listing,
                parts,
            )
        )
        return []
    except FAILURES as exc:
        failure = f"{start.url}: {first_line(exc)}"
        uncertain = "pointer" in steps  # its request sent, no answer heard
        said = f"nothing was published: {unchanged}"
    except BuildError as exc:  # a lost compare-and-swap (which says so), a damaged release
        failure = str(exc)
        said = f"nor to the output: its {CURRENT} is unchanged"
    if "published" in steps:
        return [
            f"{failure} (after its commit of {new.release}: the next commit's collection "
            "finishes it)"
        ]
    if uncertain:
        raise BuildError(
            f"{failure} (the pointer's request had no answer: {unchanged}; the next night to "
            f"{start.url} publishes this release to the output if the bucket committed it, "
            "else removes it)"
        )
    discard(local)
    raise BuildError(f"{failure} ({said})")


def discard(release: Path) -> None:
    """Remove a release that never went live."""
    shutil.rmtree(set_aside(release), ignore_errors=True)


def catch_up(output: Path, start: NightStart, keep: int) -> list[str]:
    """Settle the releases of nights to the bucket `start` read that stopped after handing
    their release to the commit, before their local swap (`awaits_local_swap`): one the bucket
    committed (its pointer's history names it) and newer than the output's current is
    published to the output now, so that the output is never behind the bucket; one it did
    not commit, or older than the current, is removed. What was done, for the log."""
    said: list[str] = []
    committed = {e.release for e in start.pointer.history} if start.pointer else set()
    releases = output / RELEASES_DIR
    found = releases.iterdir() if releases.is_dir() else iter(())
    waiting = sorted(r for r in found if awaits_local_swap(r))  # by build id: by start time
    for release in waiting:
        try:
            marked = orjson.loads((release / BUCKET_RELEASE).read_bytes())
            url, name = str(marked["url"]), str(marked["release"])
        except (OSError, orjson.JSONDecodeError, KeyError, TypeError):
            url, name = start.url, ""
        if url != start.url:
            continue  # another bucket's: for a night to that one
        live = published_release(output)
        left = f"{release}: left by a night to {url} that stopped before its local swap"
        if name not in committed:
            discard(release)
            said.append(f"{left}, and not committed there: removed")
        elif live is not None and not built_before(live.name, release.name):
            discard(release)
            said.append(f"{left}, committed there as {name} but older than {live}: removed")
        else:
            said += publish(output, release, keep)
            said.append(f"{left}, committed there as {name}: published to the output now")
    return said
