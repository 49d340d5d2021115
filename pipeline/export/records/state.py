"""What a release leaves for the next build, sealed in `state.sha256`, and the format it is in.
(docs/operating.md, "What a release leaves for the next build")"""

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
    FORMAT,
    HISTORY,
    MANIFEST,
    MANIFEST_PARQUET,
    NIGHTS_LIST,
    REPORT_JSON,
    SEAL,
    STAT,
    STORES,
    WAREHOUSE,
    marked_releases,
    published_release,
)
from pipeline.settings import SITE_FILES

# The layout of the state a release leaves (the files of SEALED, the seal, the format file,
# the pool's links): raised with any change that makes a release of the last version read
# otherwise. 1 stands for every release from before the number was kept.
STATE_FORMAT = 2
SEALED = (MANIFEST_PARQUET, STORES, STAT, HISTORY, NIGHTS_LIST, REPORT_JSON, FORMAT)
_REBUILT = "every store's pages are built again"
_ALL_CHANGED = "changes.json lists every page as changed (compared with no release)"
_UNCOMPARED = "the volumes are not compared with it"
_UNREADABLE = (OSError, ValueError, pl.exceptions.PolarsError, orjson.JSONDecodeError)


def _sha256(path: Path) -> str:
    with path.open("rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def seal(release: Path) -> None:
    """Write the release's `format` and `state.sha256`: the SHA-256 of each state file."""
    (release / FORMAT).write_text(f"{STATE_FORMAT}\n")
    present = [name for name in SEALED if (release / name).is_file()]
    (release / SEAL).write_text("".join(f"{_sha256(release / n)}  {n}\n" for n in present))


def release_format(release: Path) -> int:
    """The state format of `release`, as its `format` file says: 1 without one (a release from
    before the number was kept); 0 when it holds no number."""
    try:
        return int((release / FORMAT).read_text())
    except FileNotFoundError:
        return 1
    except (OSError, ValueError):
        return 0


def sealed_file_problem(release: Path, name: str) -> str | None:
    """Why the state file `name` of `release` cannot be trusted, or None: a release of this
    format is sealed, and its seal names `name` with its SHA-256."""
    seal_file = release / SEAL
    try:
        sealed = _read_seal(release)
    except FileNotFoundError:
        return f"{seal_file}: missing (the release was published with one)"
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        return f"{seal_file}: unreadable ({exc})"
    path = release / name
    if name not in sealed:
        return f"{path}: not in {SEAL}"
    try:
        if not path.is_file():
            return f"{path}: missing (sealed in {SEAL})"
        if _sha256(path) != sealed[name]:
            return f"{path}: damaged since it was published (its SHA-256 is not the one in {SEAL})"
    except OSError as exc:
        return f"{path}: cannot be read ({exc})"
    return None


@dataclass(frozen=True)
class Baseline:
    """The release a build follows (`release`) and its state format. Its pages, stores' records
    and report are trusted only when it is of this format (`trusted`); its history always."""

    release: Path | None = None
    format: int = STATE_FORMAT

    @property
    def trusted(self) -> Path | None:
        """The release whose pages, stores and volumes the build takes: one of this format."""
        return self.release if self.format == STATE_FORMAT else None

    def outdated(self) -> str | None:
        """The one warning for a release of another format: what the build does instead."""
        if self.release is None or self.trusted is not None:
            return None
        return (
            f"{self.release}: state format {self.format}, not this version's {STATE_FORMAT}; "
            f"{_REBUILT} and {_UNCOMPARED}; its history is carried on"
        )


def baseline(output: Path) -> tuple[Baseline, list[str]]:
    """The release this build follows, with its warnings: the one `current` links to, else the
    last published (warned), else an output from before releases (format 1); None at first."""
    live = published_release(output)
    marked = marked_releases(output)
    warnings: list[str] = []
    if live is None and marked:
        current = output / CURRENT
        if current.is_symlink():
            lost = f"{current}: links to {os.readlink(current)}, which is not there"
        else:
            lost = f"{current}: missing"
        live = marked[0]
        warnings.append(
            f"{lost}; the last release published, {marked[0]}, is this build's baseline (its "
            "history, volumes and pages)"
        )
    if live is None and (output / WAREHOUSE).is_file() and not (output / WAREHOUSE).is_symlink():
        live = output
    if live is None:
        return Baseline(), warnings
    found = Baseline(live, release_format(live))
    outdated = found.outdated()
    return found, [*warnings, outdated] if outdated else warnings


@dataclass
class PreviousPages:
    """The published release's pages as the next build may carry them over: its manifest, its
    stores' records and its files' (`filestat`), all empty when there is none or when they
    cannot be trusted (then `problem` says why, and every store is built again)."""

    release: Path | None = None
    manifest: Manifest = field(default_factory=Manifest)
    stores: dict[str, StoreRecord] = field(default_factory=dict)
    files: pl.DataFrame = field(default_factory=filestat.empty)
    problem: str | None = None
    # The release's manifest when its pages cannot be carried but its manifest can be trusted:
    # the changes are still against it.
    listed: Manifest | None = None

    @property
    def changes_base(self) -> Manifest:
        """The manifest the changes (`changes.json`) are against."""
        return self.manifest if self.listed is None else self.listed


def previous_pages(release: Path | None) -> PreviousPages:
    """The pages of `release`, a release of this format (`Baseline.trusted`)."""
    if release is None:
        return PreviousPages()
    manifest, problem = _trusted_manifest(release)
    if manifest is None:
        return PreviousPages(problem=f"{problem}; {_REBUILT}, and {_ALL_CHANGED}")
    for name in (STORES, STAT):
        damaged = sealed_file_problem(release, name)
        if damaged:
            return PreviousPages(problem=f"{damaged}; {_REBUILT}", listed=manifest)
    try:
        stores = load_store_records(release)
    except _UNREADABLE as exc:
        unreadable = _unreadable(release / STORES, exc)
        return PreviousPages(problem=f"{unreadable}; {_REBUILT}", listed=manifest)
    try:
        files = filestat.load(release)
    except _UNREADABLE as exc:
        unreadable = _unreadable(release / STAT, exc)
        return PreviousPages(problem=f"{unreadable}; {_REBUILT}", listed=manifest)
    return PreviousPages(release if len(manifest) else None, manifest, stores, files, problem)


def _trusted_manifest(release: Path) -> tuple[Manifest | None, str | None]:
    """The manifest of `release` as its seal vouches for it, and what was wrong with it: its
    `manifest.parquet`, or, that being damaged, its `manifest.json` when it makes the very
    Parquet bytes the seal names (then the damage is said, and nothing is lost); None when
    neither can be trusted (then the changes are against no release)."""
    problem = sealed_file_problem(release, MANIFEST_PARQUET)
    if problem is None:
        try:
            return Manifest.load(release), None
        except _UNREADABLE as exc:
            problem = _unreadable(release / MANIFEST_PARQUET, exc)
    sealed = _sealed(release).get(MANIFEST_PARQUET)
    try:
        manifest = Manifest.load_json(release)
    except _UNREADABLE:
        return None, problem
    if sealed is None or hashlib.sha256(manifest.parquet()).hexdigest() != sealed:
        return None, problem
    return manifest, f"{problem}; read from its {MANIFEST} instead, which its seal vouches for"


def _read_seal(release: Path) -> dict[str, str]:
    """name -> SHA-256, as the release's seal says."""
    return dict(line.split("  ", 1)[::-1] for line in (release / SEAL).read_text().splitlines())


def _sealed(release: Path) -> dict[str, str]:
    """`_read_seal`; empty when it cannot be read (`damage` says why)."""
    try:
        return _read_seal(release)
    except (OSError, UnicodeDecodeError, ValueError):
        return {}


def previous_volumes(release: Path | None) -> tuple[dict[str, int], str | None]:
    """The published build's accepted rows per table ("stores/listings") and its site's file
    count ("site"), from its report (`release`: one of this format); with why they cannot be
    had (nothing is compared then)."""
    if release is None:
        return {}, None
    problem = sealed_file_problem(release, REPORT_JSON)
    if problem:
        return {}, f"{problem}; {_UNCOMPARED}"
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
    if release is None or sealed_file_problem(release, STORES):
        return None
    try:
        return set(load_store_records(release))
    except _UNREADABLE:
        return None


def _unreadable(path: Path, exc: Exception) -> str:
    return f"{path}: cannot be read ({first_line(exc)})"
