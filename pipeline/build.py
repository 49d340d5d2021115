"""The nightly build on one machine: ingest, transform, audit and export, then the release tail
every build shares (`pipeline.conductor`). A build that fails or is killed leaves the
published release as it was (docs/operating.md, "Releases")."""

from __future__ import annotations

from typing import Any

from pipeline import db, export, ingest, transform
from pipeline.conductor import Conductor
from pipeline.contract import TABLES
from pipeline.export.pages.inventory import count_pages, count_store_channels
from pipeline.export.records.digests import inputs_digest, table_sums
from pipeline.paths import INPUT, POOL, SITE
from pipeline.progress import SILENT, Reporter
from pipeline.publish.release import BuildResult, exclusive
from pipeline.settings import Settings
from pipeline.transform.audit import audit, rejected_rows
from pipeline.transform.steps import STEPS


def build(settings: Settings, reporter: Reporter = SILENT) -> BuildResult:
    with exclusive(settings.output):
        return _build(Conductor(settings, reporter))


def _build(conductor: Conductor) -> BuildResult:
    settings = conductor.settings
    con = conductor.connect()
    try:
        db.create_schemas(con)
        with conductor.stage("ingest", len(TABLES), "tables") as advance:
            ingested = ingest.ingest_all(
                con, settings.input, advance, settings.build.max_columns, conductor.work / INPUT
            )
        with conductor.stage("transform", len(STEPS), "steps") as advance:
            steps = transform.run_steps(con, advance)
        conductor.audit(con, ingested, steps)
        total = count_store_channels(con)
        with conductor.stage("export", total, "store x channel answers") as advance:
            (conductor.release / SITE).mkdir(parents=True)  # an input may have no store at all
            site = export.write_site(
                con,
                settings,
                conductor.release / SITE,
                previous_release=conductor.previous,
                pool=(settings.output / POOL, conductor.work / POOL),
                advance=advance,
                started=conductor.started_at,
                build_id=conductor.build_id,
            )
        sums = {t.name: table_sums(con, f"raw.{t.name}") for t in TABLES}
    except BaseException:
        con.close()
        raise
    return conductor.finish(con, site, ingested, steps, inputs_digest(sums, settings.export))


def dry_run(settings: Settings) -> dict[str, Any]:
    """Validate the input as a build would (ingest, checks, audit) in memory, and count what a
    build would publish, writing nothing."""
    con = db.connect(
        memory_limit=settings.build.duckdb_memory_limit, threads=settings.build.duckdb_threads
    )
    try:
        db.create_schemas(con)
        ingested = ingest.ingest_all(con, settings.input, max_columns=settings.build.max_columns)
        transform.run_steps(con)
        audit(con, settings, ingested)
        rejected = rejected_rows(con)
        return {
            "input": str(settings.input),
            "tables": {
                i.table.name: {
                    "files": len(i.files),
                    "rows": i.rows,
                    "rejected": rejected.get(i.table.name, 0),
                }
                for i in ingested
            },
            "warnings": db.count_rows(con, "meta.warnings"),
            "stores": db.count_rows(con, "marts.store"),
            "inventory_pages": count_pages(con, settings),
            "output": str(settings.output),
        }
    finally:
        con.close()
