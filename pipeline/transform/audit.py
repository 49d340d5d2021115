"""The audit between transform and export: a build whose input is too broken stops here, before
anything is written for publishing."""

from __future__ import annotations

import duckdb

from pipeline import db
from pipeline.contract import TABLES
from pipeline.errors import BuildError
from pipeline.settings import Settings


def rejected_rows(con: duckdb.DuckDBPyConnection) -> dict[str, int]:
    """Rejected input rows per table (a row breaking several rules counts once)."""
    rows = con.execute(
        "SELECT table_name, count(DISTINCT (source_file, source_row)) FROM meta.rejects GROUP BY 1"
    ).fetchall()
    return {table: int(n) for table, n in rows}


def audit(con: duckdb.DuckDBPyConnection, settings: Settings) -> None:
    """Stop the build when the input is too broken to publish."""
    if db.count_rows(con, "staging.products") == 0:
        raise BuildError("catalog/products: no usable product rows (empty catalog)")
    rejected = rejected_rows(con)
    for table in TABLES:
        raw_rows, bad = db.count_rows(con, f"raw.{table.name}"), rejected.get(table.name, 0)
        if raw_rows and bad / raw_rows > settings.max_reject_share:
            raise BuildError(
                f"{table.group}/{table.name}: {bad} of {raw_rows} rows rejected "
                f"({bad / raw_rows:.1%}, above max_reject_share "
                f"{settings.max_reject_share:.1%}); the rows are in meta.rejects"
            )
