"""The output directory's layout, the one home of every name in it (docs/operating.md, "The
output directory")."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

WAREHOUSE = "warehouse.duckdb"
SITE = "site"
MANIFEST = "manifest.json"
MANIFEST_PARQUET = "manifest.parquet"  # the manifest's rows, which the next build reads
CHANGES = "changes.json"
STORES = "stores.parquet"  # each store's digest and counts, for the next build
STAT = "stat.parquet"  # each site file's size, mtime and inode as written (export.records.filestat)
HISTORY = "build_run.parquet"  # meta.build_run as published, which the next build carries on
REPORT_JSON = "build_report.json"
REPORT_HTML = "build_report.html"
NGINX_CONF = "nginx.conf"
NGINX_CACHE = "nginx-cache"  # the generated nginx.conf's live answers, by default (nginx's user's)
NIGHTS_LIST = "nights.json"  # the history files the release's views read (export.records.nights)
FORMAT = "format"  # the number of the layout of the release's state: see export.state
SEAL = "state.sha256"  # the SHA-256 of the files above that the next build reads
PUBLISHED = ".published"  # marks a release that went live, with when
# A Ray night's release straight to a bucket: the bucket and the release id it is committed as,
# written before the commit. Until the release's local swap, it marks a release the next night
# to that bucket settles (`publish.commit.catch_up`).
BUCKET_RELEASE = "bucket-release.json"

CURRENT = "current"  # -> releases/<build_id>, the published release, switched by one rename
RELEASES = "releases"
NIGHTS = "history"  # build_id=<build_id>/<table>.parquet: each published night's history.*
POOL = "pages"  # stores' page folders, shared by the releases that link to them
WORK = ".work"  # <build_id>/ in it: a build in progress, or the last failed one
INPUT = "input"  # in a build's work folder: the objects of an object-store input (`ingest.remote`)
LOCK = ".build.lock"  # one build at a time
DISCARDED = ".discarded-"  # a folder being deleted: renamed out of its name first

# The release's files a reader finds at OUTPUT/<name>, through `current`.
LINKS = (WAREHOUSE, SITE, MANIFEST, CHANGES, REPORT_JSON, REPORT_HTML, NGINX_CONF)


def published_release(output: Path) -> Path | None:
    """The release `OUTPUT/current` points to, or None before the first publish."""
    current = output / CURRENT
    return current.resolve() if current.is_symlink() and current.exists() else None


def published_at(release: Path) -> int | None:
    """When the release was published (its PUBLISHED mark's time, in ns); None when it was
    not."""
    try:
        return (release / PUBLISHED).stat().st_mtime_ns
    except OSError:
        return None


def marked_releases(output: Path) -> list[Path]:
    """The releases marked PUBLISHED (they went live), the last published first."""
    releases = output / RELEASES
    if not releases.is_dir():
        return []
    marked = [
        (stamp, r)
        for r in releases.iterdir()
        if not r.name.startswith(DISCARDED) and (stamp := published_at(r)) is not None
    ]
    return [r for _, r in sorted(marked, reverse=True)]


def set_aside(folder: Path) -> Path:
    """Rename `folder` out of its name, atomically, before it is deleted: a kill in the middle
    of a deletion then never leaves part of a folder under a name a build would use. Returns
    the new path, a sibling whose name starts with DISCARDED (never a release, a store's pool
    folder or a link), for the caller or a later clean-up to delete."""
    aside = folder.with_name(f"{DISCARDED}{folder.name}-{secrets.token_hex(4)}")
    os.rename(folder, aside)
    return aside
