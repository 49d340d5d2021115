"""What a release leaves for the next build, sealed: its manifest's rows, its stores' records,
its files' records (`filestat`), its history and its report, each with its SHA-256 in
`state.sha256` (the format `sha256sum -c` reads). The next build verifies a file before it
trusts it: a truncated file or a flipped byte is never read as the truth. A damaged file costs
what it held (the pages are built from scratch, the history is taken from another copy or
starts again, the volumes are not compared), and the build says why in a warning. A release
from before the seal is trusted as far as it can be read."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path

import orjson
import polars as pl

from pipeline.contract import TABLES
from pipeline.errors import first_line
from pipeline.export.records import filestat
from pipeline.export.records.digests import StoreRecord, load_store_records
from pipeline.export.records.manifest import Manifest
from pipeline.export.records.report import BuildReport
from pipeline.paths import (
    CURRENT,
    HISTORY,
    MANIFEST_PARQUET,
    REPORT_JSON,
    SEAL,
    STAT,
    STORES,
    dated_mark,
    marked_releases,
    published_release,
)
from pipeline.settings import SITE_FILES

SEALED = (MANIFEST_PARQUET, STORES, STAT, HISTORY, REPORT_JSON)
_REBUILT = "every store's pages are built again"
_UNCOMPARED = "the volumes are not compared with it"
_UNREADABLE = (OSError, ValueError, pl.exceptions.PolarsError, orjson.JSONDecodeError)


def _sha256(path: Path) -> str:
    with path.open("rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def seal(release: Path) -> None:
    """Write `state.sha256`: the SHA-256 of each state file the release has."""
    present = [name for name in SEALED if (release / name).is_file()]
    (release / SEAL).write_text("".join(f"{_sha256(release / n)}  {n}\n" for n in present))


def damage(release: Path, name: str) -> str | None:
    """Why the state file `name` of `release` cannot be trusted, or None. A release from before
    the seal (its `.published` mark has no date) cannot say: its readers catch what they cannot
    read. One published since has a seal: without it, nothing of its state is trusted."""
    seal_file = release / SEAL
    try:
        if not seal_file.is_file():
            missing = f"{seal_file}: missing (the release was published with one)"
            return missing if dated_mark(release) else None
        sealed = dict(line.split("  ", 1)[::-1] for line in seal_file.read_text().splitlines())
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        return f"{seal_file}: unreadable ({exc})"
    path = release / name
    if name not in sealed:
        return f"{path}: not in {SEAL}" if path.exists() else None
    try:
        if not path.is_file():
            return f"{path}: missing (sealed in {SEAL})"
        if _sha256(path) != sealed[name]:
            return f"{path}: damaged since it was published (its SHA-256 is not the one in {SEAL})"
    except OSError as exc:
        return f"{path}: cannot be read ({exc})"
    return None


def baseline(output: Path) -> tuple[Path | None, str | None]:
    """The release this build follows (for its history, its volumes and the pages it carries
    over): the one `current` links to. Without that link (`current` removed, or linking to no
    release), the releases are still there: the last one published is the baseline, and the
    returned warning says so. None before the first publish."""
    live = published_release(output)
    if live is not None:
        return live, None
    marked = marked_releases(output)
    if not marked:
        return None, None
    current = output / CURRENT
    if current.is_symlink():
        lost = f"{current}: links to {os.readlink(current)}, which is not there"
    else:
        lost = f"{current}: missing"
    return marked[0], (
        f"{lost}; the last release published, {marked[0]}, is this build's baseline (its "
        "history, volumes and pages)"
    )


@dataclass
class PreviousPages:
    """The published release's pages as the next build may carry them over: its manifest, its
    stores' records and its files' (`filestat`), all empty when there is none or when they
    cannot be trusted (then `problem` says why, and every store is built again). A release
    without its files' records (of an earlier version) lends no file: every page is written."""

    release: Path | None = None
    manifest: Manifest = field(default_factory=Manifest)
    stores: dict[str, StoreRecord] = field(default_factory=dict)
    files: pl.DataFrame = field(default_factory=filestat.empty)
    problem: str | None = None


def previous_pages(release: Path | None) -> PreviousPages:
    if release is None:
        return PreviousPages()
    for name in (MANIFEST_PARQUET, STORES, STAT):
        problem = damage(release, name)
        if problem:
            return PreviousPages(problem=f"{problem}; {_REBUILT}")
    try:
        manifest = Manifest.load(release)
    except _UNREADABLE as exc:
        return PreviousPages(problem=f"{_unreadable(release / MANIFEST_PARQUET, exc)}; {_REBUILT}")
    try:
        stores = load_store_records(release)
    except _UNREADABLE as exc:
        return PreviousPages(problem=f"{_unreadable(release / STORES, exc)}; {_REBUILT}")
    try:
        files = filestat.load(release)
    except _UNREADABLE as exc:
        return PreviousPages(problem=f"{_unreadable(release / STAT, exc)}; {_REBUILT}")
    return PreviousPages(release if len(manifest) else None, manifest, stores, files)


def previous_volumes(release: Path | None) -> tuple[dict[str, int], str | None]:
    """The published build's accepted rows per table ("stores/listings") and its site's file
    count ("site"), from its report; with why they cannot be had (nothing is compared then)."""
    if release is None:
        return {}, None
    problem = damage(release, REPORT_JSON)
    if problem:
        return {}, f"{problem}; {_UNCOMPARED}"
    if not (release / REPORT_JSON).is_file():  # a release from before the seal
        return {}, f"{release / REPORT_JSON}: missing; {_UNCOMPARED}"
    try:
        report = BuildReport.read(release)
    except _UNREADABLE as exc:
        return {}, f"{_unreadable(release / REPORT_JSON, exc)}; {_UNCOMPARED}"
    tables = report.tables
    volumes = {f"{t.group}/{t.name}": tables[t.name].accepted for t in TABLES if t.name in tables}
    volumes[SITE_FILES] = report.site.files
    return volumes, None


def published_stores(release: Path | None) -> set[str] | None:
    """The stores with pages in the published release (its stores' records), or None when
    there is none or its records cannot be trusted (`previous_pages` says why)."""
    if release is None or damage(release, STORES):
        return None
    try:
        return set(load_store_records(release))
    except _UNREADABLE:
        return None


def _unreadable(path: Path, exc: Exception) -> str:
    return f"{path}: cannot be read ({first_line(exc)})"
