"""Transform stage: runs the step list (`steps`) over `raw.*`; rejected rows go to
`meta.rejects`, warnings to `meta.warnings`; `audit` decides whether the result may be published."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import duckdb

from pipeline.contract import TABLES, TABLES_BY_NAME, Column
from pipeline.db import (
    build_table,
    comment_table,
    comments,
    create_index,
    quote,
    rows_written,
    run_in_one_transaction,
)
from pipeline.ingest.raw import SOURCE_DOCS, raw_comments
from pipeline.progress import Advance
from pipeline.transform.rules import (
    Query,
    duplicate_key_check,
    parsed,
    row_checks,
    unreadable_checks,
)
from pipeline.transform.steps import STEPS, Staging, Step

# The source columns as staging and the findings name them (raw.<table> has them as _<name>).
STAGED_SOURCE_DOCS = {name.removeprefix("_"): doc for name, doc in SOURCE_DOCS.items()}
FINDING_COLUMNS = {
    "table_name": "Input table (raw.<table_name>)",
    **STAGED_SOURCE_DOCS,
    "column_name": "Offending column ('*' for the whole row)",
    "value": "The offending value as written (null when missing)",
    "reason": "What is wrong",
    "check_name": "The check that found it ('contract' for the declared column rules)",
}


@dataclass(frozen=True)
class StepResult:
    name: str
    rows: int
    seconds: float


def _create_finding_tables(con: duckdb.DuckDBPyConnection) -> None:
    columns = ", ".join(
        f"{c} {'BIGINT' if c == 'source_row' else 'VARCHAR'}" for c in FINDING_COLUMNS
    )
    for table, what in (
        ("rejects", "Rows left out of the build because they break the input contract"),
        (
            "warnings",
            "Rows kept but worth a look (unknown condition, language, printing; an optional "
            "value that cannot be read, published as absent: check 'contract')",
        ),
    ):
        con.execute(f"CREATE TABLE IF NOT EXISTS meta.{table} ({columns})")
        comment_table(con, f"meta.{table}", what, FINDING_COLUMNS)


def _record(con: duckdb.DuckDBPyConnection, target: str, query: Query, check_name: str) -> int:
    return rows_written(
        con,
        f"INSERT INTO {target} SELECT table_name, source_file, source_row, column_name, "
        f"value::VARCHAR, reason, ? FROM ({query.sql})",
        [check_name, *query.params],  # the select list's ? comes before the subquery's
    )


def _raw_types(con: duckdb.DuckDBPyConnection, table: str) -> dict[str, str]:
    """column -> DuckDB type of raw.<table> (read from the table, not by a catalog scan)."""
    raw = con.table(f"raw.{quote(table)}")
    return {name: str(kind) for name, kind in zip(raw.columns, raw.types, strict=True)}


def _run_staging(con: duckdb.DuckDBPyConnection, step: Staging) -> int:
    """Reject the rows that break the contract, and warn of the optional values that cannot be
    read; `valid_<table>` is the rest, each declared column parsed to its type (an unreadable
    value: absent), for the staging SQL; then the staging checks."""
    table = TABLES_BY_NAME[step.table]
    types = _raw_types(con, table.name)
    _record(con, "meta.rejects", row_checks(table, types), "contract")
    rejected = (
        f"(SELECT source_file, source_row FROM meta.rejects WHERE table_name = '{table.name}')"
    )
    unreadable = unreadable_checks(table, types)
    if unreadable is not None:  # a rejected row's values are not read: no warning
        query = Query(
            f"SELECT * FROM ({unreadable.sql}) ANTI JOIN {rejected} USING "
            "(source_file, source_row)",
            unreadable.params,
        )
        _record(con, "meta.warnings", query, "contract")
    name = quote(table.name)
    values = ", ".join(
        f"{_unless_unreadable(c, parsed(c, types[c.name]))} AS {quote(c.name)}"
        for c in table.columns
    )
    con.execute(
        f"CREATE OR REPLACE TEMP VIEW valid_{table.name} AS "
        f"SELECT raw_row.* REPLACE ({values}) FROM raw.{name} AS raw_row ANTI JOIN {rejected} r "
        f"ON r.source_file = raw_row._source_file AND r.source_row = raw_row._source_row "
        f"LEFT JOIN (SELECT source_file, source_row, list(column_name) AS {UNREADABLE} "
        f"FROM meta.warnings WHERE table_name = '{table.name}' AND check_name = 'contract' "
        f"GROUP BY ALL) w "
        f"ON w.source_file = raw_row._source_file AND w.source_row = raw_row._source_row"
    )
    rows = build_table(con, step.file)
    checks: list[tuple[Query, str, str]] = []
    if table.key:
        by_name = {c.name: c for c in table.columns}
        key = duplicate_key_check(table, [by_name[c].staged_name for c in table.key])
        checks.append((key, "duplicate_key", "reject"))
    checks += [(Query(c.file.sql, []), c.name, c.severity) for c in step.checks]
    for query, check_name, severity in checks:
        target = "meta.rejects" if severity == "reject" else "meta.warnings"
        found = _record(con, target, query, check_name)
        if found and severity == "reject":
            rows -= rows_written(
                con,
                f"DELETE FROM staging.{name} AS s USING meta.rejects AS r "
                f"WHERE r.table_name = ? AND r.check_name = ? "
                f"AND r.source_file = s.source_file AND r.source_row = s.source_row",
                [table.name, check_name],
            )
    return rows


UNREADABLE = "_unreadable"  # valid_<table>'s list of a row's columns that cannot be read


def _unless_unreadable(column: Column, value: str) -> str:
    """An optional column's parsed `value`, absent where it cannot be read (SQL)."""
    if column.required:
        return value
    return f"CASE WHEN list_contains({UNREADABLE}, '{column.name}') THEN NULL ELSE {value} END"


def run_steps(
    con: duckdb.DuckDBPyConnection,
    advance: Advance | None = None,
    steps: Sequence[Step] = STEPS,
) -> list[StepResult]:
    """Run `steps` (every step, or the catalog's or the stores' part of them)."""
    _create_finding_tables(con)
    results = []
    for step in steps:
        started = time.perf_counter()
        rows = _run_staging(con, step) if isinstance(step, Staging) else build_table(con, step.file)
        results.append(StepResult(step.file.table, rows, time.perf_counter() - started))
        if advance:
            advance(1)
    return results


def document(con: duckdb.DuckDBPyConnection) -> None:
    """The warehouse's comments on every raw table and every table the steps built, in one
    transaction: a build writes them once, at its end (`Conductor.finish`); a run in memory
    needs none."""
    columns: dict[str, set[str]] = {}
    for schema, table, column in con.execute(
        "SELECT schema_name, table_name, column_name FROM duckdb_columns() "
        "WHERE database_name = current_database()"
    ).fetchall():
        columns.setdefault(f"{schema}.{table}", set()).add(column)
    documented = [(f"raw.{t.name}", *raw_comments(t)) for t in TABLES]
    documented += [(s.file.table, s.file.table_comment, _column_docs(s)) for s in STEPS]
    statements = [
        statement
        for target, table_comment, docs in documented
        if target in columns
        for statement in comments(target, table_comment, docs, columns[target])
    ]
    run_in_one_transaction(con, statements)


def _column_docs(step: Step) -> dict[str, str]:
    """A step's column comments: its SQL file's header; a staging table's columns are the
    contract's, written once there."""
    if isinstance(step, Staging):
        table = TABLES_BY_NAME[step.table]
        docs = {c.staged_name: c.doc for c in table.columns} | STAGED_SOURCE_DOCS
        return docs | step.file.column_comments
    return step.file.column_comments


def staged_rows(steps: Sequence[StepResult]) -> dict[str, int]:
    """Accepted rows per input table (its `staging.<table>` step's rows), by table name."""
    return {s.name.removeprefix("staging."): s.rows for s in steps if s.name.startswith("staging.")}


def create_indexes(con: duckdb.DuckDBPyConnection) -> None:
    """The ART indexes of the tables live answers look rows up by (`Model.indexes`,
    `Staging.indexes`), made when the build is done with the warehouse: DuckDB holds an index
    in memory, where no eviction of its cache frees it for the export."""
    for step in STEPS:
        for column in step.indexes:
            create_index(con, step.file, column)
