"""Publishing a release: built beside the published outputs, published by one rename.
(docs/operating.md, "Releases")"""

from __future__ import annotations

import fcntl
import os
import re
import secrets
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import polars as pl

from pipeline.api.urls import STORES_DIR
from pipeline.errors import BuildError
from pipeline.export.records.manifest import Manifest
from pipeline.export.records.report import BuildReport
from pipeline.export.records.state import STATE_FORMAT, release_format
from pipeline.paths import (
    BUCKET_RELEASE,
    CURRENT,
    DISCARDED,
    LINKS,
    LOCK,
    POOL,
    PUBLISHED,
    RELEASES,
    SITE,
    WORK,
    marked_releases,
    published_at,
    published_release,
    set_aside,
)


@dataclass
class BuildResult:
    """A published release: its id and folder, its report and its stages' seconds."""

    build_id: str
    release: Path
    report: BuildReport
    stage_seconds: dict[str, float] = field(default_factory=dict)


_last_id_us = 0  # the newest id's time made by this process, in microseconds


def new_build_id() -> str:
    """UTC start time to the microsecond and a random suffix: ids made one after another sort
    by when they were made (in one process strictly, even within one microsecond or across a
    clock step back), and ids made at once on two machines never repeat."""
    global _last_id_us
    now_us = max(time.time_ns() // 1000, _last_id_us + 1)
    _last_id_us = now_us
    moment = datetime.fromtimestamp(now_us // 1_000_000, UTC)
    return f"{moment:%Y%m%dT%H%M%S}.{now_us % 1_000_000:06d}Z-{secrets.token_hex(3)}"


def built_before(build_id: str, other: str) -> bool:
    """Whether build `build_id` started before build `other`, by the start times their ids
    begin with (`new_build_id`: to the microsecond, UTC). Two builds of one moment, or an id
    of another form, are neither before the other."""
    mine, theirs = _ID_TIME.match(build_id), _ID_TIME.match(other)
    return bool(mine and theirs and mine[0] < theirs[0])


_ID_TIME = re.compile(r"\d{8}T\d{6}\.\d{6}Z(?=-)")  # `new_build_id`'s start time


def build_time(build_id: str) -> datetime | None:
    """The start time a build id begins with (`new_build_id`: UTC, to the microsecond), the
    one time a build states; None for an id of another form."""
    found = _ID_TIME.match(build_id)
    if found is None:
        return None
    return datetime.strptime(found[0], "%Y%m%dT%H%M%S.%fZ").replace(tzinfo=UTC)


def publish(output: Path, release: Path, keep: int) -> list[str]:
    """Switch `current` to the new release (its warehouse in it): one rename publishes the
    warehouse, the site, the manifest, the report and the nginx configuration together. What
    fails after that rename (the mark, the stable links, the clean-up: a full disk, say) does
    not unpublish it: it is returned, for the log, and the next build repairs it
    (`exclusive`)."""
    tmp = output / f".{CURRENT}-{release.name}"
    tmp.unlink(missing_ok=True)
    tmp.symlink_to(Path(RELEASES) / release.name)
    os.replace(tmp, output / CURRENT)  # the commit point
    try:
        mark_published(release)  # after the swap: a marked release has been live
        _link_stable_names(output, release)
        _keep_last(output, release, keep)
        collect_pool(output)
    except OSError as exc:
        return [
            f"{release}: published, but the clean-up after it failed ({exc}); the next "
            "build repairs it"
        ]
    return []


def _link_stable_names(output: Path, release: Path) -> None:
    """OUTPUT/<name> -> current/<name> for each name of LINKS the release holds; a link to a
    name it lacks (a Ray night's release straight to a bucket has no site and no nginx
    configuration) is removed, not left pointing at nothing."""
    for name in LINKS:
        stable = output / name
        if not os.path.lexists(release / name):
            if stable.is_symlink():
                stable.unlink()
            continue
        if not stable.is_symlink():
            # The first build in this directory, or an output of the layout before releases
            # (its files in place, their history carried on: `state.baseline`).
            tmp = output / f".{name}-{release.name}"
            tmp.unlink(missing_ok=True)
            tmp.symlink_to(Path(CURRENT) / name)
            if stable.is_dir():
                shutil.rmtree(stable)
            os.replace(tmp, stable)


def _keep_last(output: Path, release: Path, keep: int) -> None:
    """Delete the releases published before the last `keep`, by when each was published."""
    for old in marked_releases(output)[keep:]:
        if old != release:
            shutil.rmtree(set_aside(old), ignore_errors=True)


def mark_published(release: Path) -> None:
    """Mark a release that went live, with when (UTC). Only a release that went live is kept
    and counted in `releases_kept`."""
    (release / PUBLISHED).write_text(datetime.now(UTC).isoformat(timespec="seconds") + "\n")


def missing_files(site: Path, manifest: Manifest, chunk: int = 100_000) -> list[str]:
    """The files the manifest names that are not in `site` (through the stores' links): a
    listing a folder, so that checking millions of files costs no stat a file."""
    missing: list[str] = []
    listed: tuple[str, set[str]] = ("", set())
    for start in range(0, len(manifest), chunk):
        part = manifest.frame.slice(start, chunk).select(
            folder=pl.col("path").str.replace(r"/[^/]*$", ""),
            name=pl.col("path").str.replace(r"^.*/", ""),
        )
        for folder, names in part.group_by("folder", maintain_order=True).agg("name").iter_rows():
            if folder != listed[0]:
                try:
                    listed = (folder, set(os.listdir(site / folder)))
                except OSError:  # no such folder, or a link to none
                    listed = (folder, set())
            missing += [f"{folder}/{name}" for name in names if name not in listed[1]]
    return missing


def check_release(release: Path, manifest: Manifest) -> None:
    """Refuse to publish a release that lacks a file its manifest names."""
    missing = missing_files(release / SITE, manifest)
    if missing:
        raise BuildError(
            f"{release}: {len(missing)} files its manifest names are missing "
            f"(first: {missing[0]}); nothing was published"
        )


def store_folders(site: Path) -> dict[str, str]:
    """store key -> the pool folder its symlink in `site` points to."""
    stores = site / STORES_DIR
    if not stores.is_dir():  # no store at all
        return {}
    with os.scandir(stores) as entries:
        return {e.name: os.path.basename(os.readlink(e)) for e in entries if e.is_symlink()}


def collect_pool(output: Path) -> None:
    """Delete the pool folders that no release links to any more (a store's pages of a
    release deleted since, or of a build that did not publish)."""
    pool = output / POOL
    if not pool.is_dir():
        return
    used = {f for r in (output / RELEASES).iterdir() for f in store_folders(r / SITE).values()}
    for folder in pool.iterdir():
        if folder.name.startswith(DISCARDED):  # set aside by a build that was killed since
            shutil.rmtree(folder, ignore_errors=True)
        elif folder.name not in used:
            shutil.rmtree(set_aside(folder), ignore_errors=True)


@contextmanager
def exclusive(output: Path) -> Iterator[None]:
    """One build at a time per output directory; leftovers of killed builds are removed and the
    mark of a release that went live is repaired (see `_repair`)."""
    output.mkdir(parents=True, exist_ok=True)
    with (output / LOCK).open("w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise BuildError(f"{output}: another build is running") from None
        shutil.rmtree(output / WORK, ignore_errors=True)
        _repair(output)
        for stray in output.glob(".*-2*"):  # temporary links of a killed publish
            if stray.is_symlink():
                stray.unlink(missing_ok=True)
        yield


def _repair(output: Path) -> None:
    """Make the releases say what went live: mark the one `current` links to, remove those
    that never went live, and leave a bucket's release (BUCKET_RELEASE) to `commit.catch_up`.
    A release of an earlier format marked later than the live one never went live: earlier
    versions marked before the swap. Refuses an output whose `current` is not a link."""
    current = output / CURRENT
    if current.exists() and not current.is_symlink():
        raise BuildError(
            f"{current}: a folder, not the link to the published release (was the output copied "
            "with links followed, cp -rL?): restore it with links kept (cp -a), or move "
            f"{CURRENT} away to build on the last release published"
        )
    releases = output / RELEASES
    if not releases.is_dir():
        return
    live = published_release(output)
    live_at = published_at(live) if live is not None else None
    for release in releases.iterdir():
        if release.name.startswith(DISCARDED):  # a deletion a kill interrupted
            shutil.rmtree(release, ignore_errors=True)
        elif release.resolve() != live and not _went_live(release, live_at):
            if awaits_local_swap(release):
                continue
            shutil.rmtree(set_aside(release), ignore_errors=True)
    if live is not None and live_at is None:
        mark_published(live)


def awaits_local_swap(release: Path) -> bool:
    """Whether `release` was handed to a bucket's commit and has not gone live here (see
    BUCKET_RELEASE)."""
    return (release / BUCKET_RELEASE).is_file() and published_at(release) is None


def _went_live(release: Path, live_at: int | None) -> bool:
    marked_at = published_at(release)
    if marked_at is None:
        return False
    current_format = release_format(release) == STATE_FORMAT  # marked after its swap
    return current_format or live_at is None or marked_at <= live_at
