"""Export stage: the warehouse -> the files of one release: the site (`write_site`: the pages
and the bulk files), its manifest and changes, the stores' records, the nginx configuration and
the build report. A store whose digest equals the previous release's is carried over without
being answered."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import duckdb
import polars as pl

from pipeline import db
from pipeline.api.urls import BULK_INDEX
from pipeline.export.nginx import write_nginx_conf
from pipeline.export.pages.bulk import write_bulk_files
from pipeline.export.pages.catalog import write_catalog_pages, write_category_pages
from pipeline.export.pages.help import write_help
from pipeline.export.pages.inventory import write_inventory_pages
from pipeline.export.records import filestat
from pipeline.export.records.digests import StoreRecord, write_store_records
from pipeline.export.records.manifest import Manifest, file_counts, write_changes
from pipeline.export.records.state import previous_pages
from pipeline.export.writer import SiteWriter
from pipeline.paths import CHANGES, MANIFEST, MANIFEST_PARQUET, SITE
from pipeline.progress import Advance
from pipeline.settings import Settings


@dataclass
class Site:
    """What `write_site` wrote: the manifest, the paths changed and removed since the previous
    release, the stores' records, the counts for the report, why the previous release's
    pages could not be carried over, if they could not (`state.previous_pages`), and the
    records (`filestat`) of the files carried over, checked as they were carried."""

    manifest: Manifest
    changed: pl.Series
    removed: pl.Series
    stores: dict[str, StoreRecord]
    counts: dict[str, int]
    previous_problem: str | None = None
    carried: pl.DataFrame | None = None
    # Where the pages are when not in the release's own site folder (a Ray night's bucket):
    # the release then records and checks no site file on this disk.
    pages_in: str | None = None
    # A folder holding the release's manifest (.json, .parquet) and changes already written,
    # composed out of core (a Ray night's bucket, `distributed.compose`): `manifest`,
    # `changed` and `removed` are then empty, and `counts` holds what they would give.
    composed: Path | None = None


def write_site(
    con: duckdb.DuckDBPyConnection,
    settings: Settings,
    site_dir: Path,
    *,
    previous_release: Path | None = None,
    pool: tuple[Path, Path] | None = None,
    advance: Advance | None = None,
    carried_records: dict[str, StoreRecord] | None = None,
    stores: bool = True,
    common: bool = True,
    started: datetime | None = None,
    build_id: str | None = None,
    previous_index: bytes | None = None,
) -> Site:
    """Write the site; a file equal to the previous release's is hard-linked to it.

    In a Ray night, the shards write only the stores' pages (`common` False) and the driver only
    the common ones (`stores` False), the bulk files among them (their index says `started`,
    the build's start: `bulk.built_at`, and `build_id`, unless the previous release's index,
    read from its site or given as `previous_index`, lists the same files). A store whose
    digest equals its record in `carried_records` is carried by the record alone."""
    memory_limit = settings.build.duckdb_memory_limit
    db.release_memory(con, memory_limit)  # the transform's, before the previous manifest is read
    previous = previous_pages(previous_release)
    if carried_records is not None:
        previous.stores = carried_records
    previous_site = previous.release / SITE if previous.release else None
    shared, staging = pool or (None, None)
    with SiteWriter(
        site_dir,
        previous_site,
        previous.manifest,
        shared,
        staging,
        previous.files,
        carry_by_record=carried_records is not None,
    ) as writer:
        counts: dict[str, int] = {}
        records: dict[str, StoreRecord] = {}
        if stores:
            counts, records = write_inventory_pages(
                con, writer, settings, previous_stores=previous.stores, advance=advance
            )
        counts["category_pages"] = counts["catalog_pages"] = 0
        if common:
            counts["category_pages"] = write_category_pages(con, writer, settings.export)
            counts["catalog_pages"] = write_catalog_pages(con, writer, settings.export)
            write_help(writer)
            if settings.export.bulk_files:
                if previous_index is None:
                    previous_index = writer.previous_file(str(BULK_INDEX))
                write_bulk_files(con, writer, started, build_id, previous_index)
    db.release_memory(con, memory_limit)  # the export's, before the manifest is sorted
    manifest = writer.manifest()
    changed, removed = manifest.changes(previous.changes_base)
    counts.update(file_counts(manifest, changed, removed))
    return Site(manifest, changed, removed, records, counts, previous.problem, writer.carried())


def write_release_files(release: Path, site: Site, settings: Settings) -> None:
    """The release's manifest, its changes since the published release, the stores' records,
    its files' records (a stat of each file not carried over) and the nginx configuration of
    its site (none for a release whose pages are in a bucket: `pipeline nginx-bucket`'s)."""
    if site.composed is not None:
        for name in (MANIFEST, MANIFEST_PARQUET, CHANGES):
            shutil.move(site.composed / name, release / name)
    else:
        site.manifest.write(release)
        write_changes(release / CHANGES, site.changed, site.removed)
    if site.pages_in is None:
        records = filestat.record(release / SITE, site.manifest.frame["path"], site.carried)
    else:  # no site file on this disk: a local build after it builds every store again
        records = filestat.empty()
    filestat.write(release, records)
    write_store_records(release, site.stores)
    if site.pages_in is None:
        write_nginx_conf(release, settings)
