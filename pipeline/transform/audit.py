"""The audit between transform and export: a build whose input is too broken stops here, before
anything is written for publishing."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import duckdb

from pipeline import db
from pipeline.errors import BuildError
from pipeline.ingest import IngestedTable
from pipeline.settings import SITE_FILES, Settings


def rejected_rows(con: duckdb.DuckDBPyConnection) -> dict[str, int]:
    """Rejected input rows per table (a row breaking several rules counts once)."""
    rows = con.execute(
        "SELECT table_name, count(DISTINCT (source_file, source_row)) FROM meta.rejects GROUP BY 1"
    ).fetchall()
    return {table: int(n) for table, n in rows}


def audit(
    con: duckdb.DuckDBPyConnection, settings: Settings, ingested: Sequence[IngestedTable]
) -> None:
    """Stop the build when the input is too broken to publish."""
    if db.count_rows(con, "staging.products") == 0:
        raise BuildError("catalog/products: no usable product rows (empty catalog)")
    rejected = rejected_rows(con)
    for ingested_table in ingested:
        table = ingested_table.table
        raw_rows, bad = ingested_table.rows, rejected.get(table.name, 0)
        if raw_rows and bad / raw_rows > settings.max_reject_share:
            raise BuildError(
                f"{table.group}/{table.name}: {bad} of {raw_rows} rows rejected "
                f"({bad / raw_rows:.1%}, above max_reject_share "
                f"{settings.max_reject_share:.1%}); the rows are in meta.rejects"
            )


ACCEPT_FLAG = "--accept-volume-change"


def check_volumes(
    published: Mapping[str, int], tonight: Mapping[str, int], settings: Settings
) -> list[str]:
    """Stop the build when a count moved from the published build's past its limits
    (`settings.volume`): an export cut in half must not publish half a site. With
    `accept_volume_change`, returns those moves instead, for the build's warnings."""
    accepted = []
    for name, before in published.items():
        if name not in tonight or before < max(settings.volume.min_count, 1):
            continue
        now, (max_drop, max_rise) = tonight[name], settings.volume.limits(name)
        change = (now - before) / before
        if change < -max_drop or change > max_rise:
            past = f"max_drop {max_drop:.0%}" if change < 0 else f"max_rise {max_rise:.0%}"
            what = "files" if name == SITE_FILES else "accepted rows"
            move = (
                f"{name}: {now} {what}, against {before} in the published build "
                f"({change:+.1%}, past volume.{past})"
            )
            if not settings.accept_volume_change:
                raise BuildError(
                    f"{move}; if the change is real, build with --accept-volume-change"
                )
            accepted.append(f"{move}: accepted (accept_volume_change)")
    return accepted
