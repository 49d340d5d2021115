"""Row-level contract checks, generated from the declared contract (`pipeline.contract`).

Each check is a SELECT returning the offending rows of `raw.<table>` as
(table_name, source_file, source_row, column_name, value, reason). Identifiers come only from the
contract; reasons and defaults travel as bind parameters. Relational checks (unknown ids,
duplicate listing keys) are plain SQL files in `sql/checks/`; the duplicate-key check of a
declared table key is generated here too, over the staging table.
"""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.contract import Column, Kind, Table
from pipeline.db import quote

INTEGER_TEXT = "-?[0-9]+"
DECIMAL_TEXT = r"-?[0-9]+(\.[0-9]+)?"
TOO_MANY_DECIMALS = r"-?[0-9]+\.[0-9]{2}[0-9]*[1-9][0-9]*"
BOOLEAN_TEXTS = ("true", "false", "1", "0")
TIMESTAMP_TEXT = r"[0-9]{4}-[0-9]{2}-[0-9]{2}([T ][0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]+)?)?)?"


@dataclass(frozen=True)
class Query:
    sql: str
    params: list[object]


def cell(column: Column) -> str:
    """The raw text of a column with the empty-cell and default rules applied (SQL)."""
    text = f"nullif({quote(column.name)}, '')"
    if column.default is not None:
        return f"coalesce({text}, '{column.default}')"
    return text


def _rules(column: Column) -> list[tuple[str, str]]:
    """(failing condition over `v`, reason) for one column; `v` is the cell text, not null."""
    t = "trim(v)"
    kind = column.kind
    rules: list[tuple[str, str]] = []
    if kind in (Kind.INT32, Kind.INT64):
        bits = "32" if kind is Kind.INT32 else "64"
        rules.append(
            (
                f"NOT regexp_full_match({t}, '{INTEGER_TEXT}') OR try_cast({t} AS {kind}) IS NULL",
                f"not a {bits}-bit integer",
            )
        )
    elif kind is Kind.BOOL:
        rules.append((f"lower({t}) NOT IN {BOOLEAN_TEXTS!r}", "not a boolean (true, false, 1, 0)"))
    elif kind is Kind.MONEY:
        rules.append((f"NOT regexp_full_match({t}, '{DECIMAL_TEXT}')", "not a decimal number"))
        rules.append(
            (f"regexp_full_match({t}, '{TOO_MANY_DECIMALS}')", "more than two decimal places")
        )
        rules.append(
            (
                f"regexp_full_match({t}, '{DECIMAL_TEXT}') AND try_cast({t} AS {kind}) IS NULL",
                "out of range",
            )
        )
    elif kind is Kind.TIMESTAMP:
        rules.append(
            (
                f"NOT regexp_full_match({t}, '{TIMESTAMP_TEXT}') "
                f"OR try_cast({t} AS TIMESTAMP) IS NULL",
                "not a timestamp without zone (YYYY-MM-DDTHH:MM:SS.fff)",
            )
        )
    elif kind is Kind.TEXT_LIST:
        # try_cast, never a cast: DuckDB evaluates both sides of an AND.
        rules.append(
            (
                "NOT coalesce(json_type(try_cast(v AS JSON)) = 'ARRAY' AND coalesce(list_bool_and("
                "list_transform(json_extract(try_cast(v AS JSON), '$[*]'), "
                "lambda x: json_type(x) = 'VARCHAR')), true), false)",
                "not a JSON array of strings",
            )
        )
    if column.non_negative:
        rules.append((f"try_cast({t} AS {kind}) < 0", "negative value"))
    if column.pattern is not None:
        rules.append(
            (f"NOT regexp_full_match(v, '{column.pattern}')", f"does not match {column.pattern}")
        )
    return rules


def row_checks(table: Table) -> Query:
    """All row-level rule violations of `raw.<table>`, one row per (row, column, rule)."""
    parts: list[str] = []
    params: list[object] = []
    src = f"raw.{quote(table.name)}"
    head = "SELECT ? AS table_name, _source_file AS source_file, _source_row AS source_row"

    parts.append(
        f"{head}, '*' AS column_name, NULL::VARCHAR AS value, _parse_error AS reason "
        f"FROM {src} WHERE _parse_error IS NOT NULL"
    )
    params.append(table.name)
    for column in table.columns:
        v = cell(column)
        if column.required:
            parts.append(
                f"{head}, ? AS column_name, NULL::VARCHAR AS value, 'missing value' AS reason "
                f"FROM {src} WHERE _parse_error IS NULL AND {v} IS NULL"
            )
            params += [table.name, column.name]
        for condition, reason in _rules(column):
            parts.append(
                f"{head}, ? AS column_name, v AS value, ? AS reason "
                f"FROM (SELECT *, {v} AS v FROM {src}) "
                f"WHERE _parse_error IS NULL AND v IS NOT NULL AND ({condition})"
            )
            params += [table.name, column.name, reason]
    by_name = {c.name: c for c in table.columns}
    for target, flag in table.required_if:
        parts.append(
            f"{head}, ? AS column_name, NULL::VARCHAR AS value, ? AS reason FROM {src} "
            f"WHERE _parse_error IS NULL AND {cell(by_name[target])} IS NULL "
            f"AND lower(trim({cell(by_name[flag])})) IN ('true', '1')"
        )
        params += [table.name, target, f"missing value (required when {flag} is true)"]
    return Query("\nUNION ALL\n".join(parts), params)


def duplicate_key_check(table: Table, key_columns: list[str]) -> Query:
    """Rows of `staging.<table>` whose key occurs more than once: all of them are rejected,
    because nothing says which of the conflicting rows is the right one."""
    key = ", ".join(key_columns)
    sql = (
        f"SELECT ? AS table_name, source_file, source_row, ? AS column_name, "
        f"concat_ws(',', {key})::VARCHAR AS value, ? AS reason "
        f"FROM staging.{quote(table.name)} "
        f"QUALIFY count(*) OVER (PARTITION BY {key}) > 1"
    )
    return Query(sql, [table.name, "+".join(table.key), "duplicate key"])
