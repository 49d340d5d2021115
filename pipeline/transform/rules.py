"""The contract's row-level rules as SQL, generated from `pipeline.contract`: the checks run
before staging, and `parsed`, the one place a raw value becomes the contract's type.
Identifiers come only from the contract; reasons and defaults travel as bind parameters.
A required column's broken rule rejects its row (`row_checks`); an optional column's value that
breaks one is unreadable (`unreadable_checks`): a warning, and the value is staged absent."""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.contract import Column, Kind, Table
from pipeline.db import quote

INTEGER_TEXT = r"-?[0-9]+(\.0+)?"  # `3.0` is 3, read without loss
DECIMAL_TEXT = r"-?[0-9]+(\.[0-9]+)?"
TOO_MANY_DECIMALS = r"-?[0-9]+\.[0-9]{2}[0-9]*[1-9][0-9]*"
BOOLEAN_TEXTS = ("true", "false", "1", "0")
TIMESTAMP_TEXT = r"[0-9]{4}-[0-9]{2}-[0-9]{2}([T ][0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]+)?)?)?"


@dataclass(frozen=True)
class Query:
    sql: str
    params: list[object]


TEXT = "VARCHAR"  # the type of a raw column loaded as text
# Integer types whose every value fits the contract's integer kind: no range check needed.
_SAFE_INTEGERS = {
    Kind.INT32: {"TINYINT", "SMALLINT", "INTEGER", "UTINYINT", "USMALLINT"},
    Kind.INT64: {"TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT", "UINTEGER"},
}


def cell(column: Column, raw_type: str = TEXT) -> str:
    """The raw value of a column with the empty-cell and default rules applied (SQL)."""
    if raw_type != TEXT:  # typed: no empty cells
        if column.default is not None:
            return f"coalesce({quote(column.name)}, CAST('{column.default}' AS {raw_type}))"
        return quote(column.name)
    text = f"nullif({quote(column.name)}, '')"
    if column.default is not None:
        return f"coalesce({text}, '{column.default}')"
    return text


def parsed(column: Column, raw_type: str = TEXT) -> str:
    """The value of a column as the contract's type (SQL), null when empty or unparseable
    (a row whose value does not parse is rejected before staging reads it)."""
    value = cell(column, raw_type)
    if raw_type != TEXT:  # try_cast: DuckDB may cast before the rejects are left out
        return f"try_cast({value} AS {column.sql_type})"
    return _parsed_text(column, value)


def _parsed_text(column: Column, value: str) -> str:
    """`parsed` of the text `value` (SQL)."""
    kind = column.kind
    if kind is Kind.TEXT:
        return value
    if kind is Kind.BOOL:
        return f"as_bool({value})"
    if kind is Kind.TEXT_LIST:
        return f"""CAST(from_json({value}, '["VARCHAR"]') AS VARCHAR[])"""
    if kind is Kind.RECORD:
        obj = f"try_cast({value} AS JSON)"
        record = f"CASE WHEN json_type({obj}) = 'OBJECT' THEN {_struct(column, obj)} END"
        return f"CAST({record} AS {column.sql_type})"
    if kind is Kind.RECORD_LIST:
        entries = f"try_cast(try_cast({value} AS JSON) AS JSON[])"
        records = f"list_transform({entries}, lambda e: {_struct(column, 'e')})"
        return f"CAST({records} AS {column.sql_type})"
    return f"try_cast(trim({value}) AS {kind})"


def _struct(column: Column, obj: str) -> str:
    """The fields of the JSON object `obj` as a struct of their staged names (SQL)."""
    fields = (f"{quote(f.staged_name)} := {_parsed_text(f, _field(f, obj))}" for f in column.fields)
    return f"struct_pack({', '.join(fields)})"


def _field(field: Column, obj: str) -> str:
    """A field of the JSON object `obj` as text (SQL): a string as it is, a number or a boolean
    as JSON writes it, null when missing or null; empty text is no value but for text fields."""
    text = f"json_extract_string({obj}, '$.{field.name}')"
    return text if field.kind is Kind.TEXT else f"nullif({text}, '')"


def _typed_rules(column: Column, raw_type: str) -> list[tuple[str, str]]:
    """(failing condition over `v`, reason) for a typed column: what its type leaves open."""
    rules: list[tuple[str, str]] = []
    kind = column.kind
    if kind in _SAFE_INTEGERS and raw_type not in _SAFE_INTEGERS[kind]:
        bits = "32" if kind is Kind.INT32 else "64"
        rules.append((f"try_cast(v AS {kind}) IS NULL", f"not a {bits}-bit integer"))
    elif kind is Kind.MONEY:
        rules.append((f"try_cast(v AS {kind}) IS NULL", "out of range"))
    if column.non_negative:
        rules.append(("v < 0", "negative value"))
    return rules


def _rules(column: Column, v: str = "v") -> list[tuple[str, str]]:
    """(failing condition over `v`, reason) for one column; `v` is the cell text, not null."""
    t = f"trim({v})"
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
                f"NOT coalesce(json_type(try_cast({v} AS JSON)) = 'ARRAY' AND coalesce("
                f"list_bool_and(list_transform(json_extract(try_cast({v} AS JSON), '$[*]'), "
                "lambda x: json_type(x) = 'VARCHAR')), true), false)",
                "not a JSON array of strings",
            )
        )
    elif kind in (Kind.RECORD, Kind.RECORD_LIST):
        rules += _record_rules(column, f"try_cast({v} AS JSON)")
    if column.non_negative:
        rules.append((f"try_cast({t} AS {kind}) < 0", "negative value"))
    if column.pattern is not None:
        rules.append(
            (f"NOT regexp_full_match({v}, '{column.pattern}')", f"does not match {column.pattern}")
        )
    return rules


def _record_rules(column: Column, value: str) -> list[tuple[str, str]]:
    """(failing condition, reason) for a RECORD or RECORD_LIST column whose text, as JSON, is
    `value` (null when it is no JSON): JSON text `null` is no value; an object's other keys
    are ignored."""
    if column.kind is Kind.RECORD:
        rules = [
            (f"NOT coalesce(json_type({value}) IN ('OBJECT', 'NULL'), false)", "not a JSON object")
        ]
        for field in column.fields:
            for condition, reason in _field_rules(field, value):
                rules.append(
                    (f"json_type({value}) = 'OBJECT' AND ({condition})", f"{field.name}: {reason}")
                )
        return rules
    entries = f"try_cast({value} AS JSON[])"
    rules = [
        (f"NOT coalesce(json_type({value}) IN ('ARRAY', 'NULL'), false)", "not a JSON array"),
        (
            f"list_bool_or(list_transform({entries}, lambda e: json_type(e) <> 'OBJECT'))",
            "an entry is not a JSON object",
        ),
    ]
    for field in column.fields:
        for condition, reason in _field_rules(field, "e"):
            rules.append(
                (
                    f"list_bool_or(list_transform({entries}, "
                    f"lambda e: json_type(e) = 'OBJECT' AND coalesce({condition}, false)))",
                    f"an entry's {field.name}: {reason}",
                )
            )
    return rules


def _field_rules(field: Column, obj: str) -> list[tuple[str, str]]:
    """(failing condition, reason) for a field of the JSON object `obj`: a value (not an object
    or an array) and its text as a column of its kind (`_rules`). A missing or null field is a
    value: null."""
    found = f"json_type({obj}, '$.{field.name}')"
    rules = [(f"{found} IN ('OBJECT', 'ARRAY')", "an object or array, not a value")]
    text = _field(field, obj)
    scalar = f"{found} NOT IN ('OBJECT', 'ARRAY') AND {text} IS NOT NULL"
    rules += [(f"{scalar} AND ({condition})", reason) for condition, reason in _rules(field, text)]
    return rules


def row_checks(table: Table, raw_types: dict[str, str] | None = None) -> Query:
    """The row-level rule violations that reject a row of `raw.<table>`, one row per (row,
    column, rule): a row that cannot be parsed, and a required column's broken rules.
    `raw_types`: the raw table's column types (a column not named is text)."""
    types = raw_types or {}
    src = f"raw.{quote(table.name)}"
    parts = [
        f"{_HEAD}, '*' AS column_name, NULL::VARCHAR AS value, _parse_error AS reason "
        f"FROM {src} WHERE _parse_error IS NOT NULL"
    ]
    params: list[object] = [table.name]
    for column in table.columns:
        if not column.required:
            continue
        v = cell(column, types.get(column.name, TEXT))
        parts.append(
            f"{_HEAD}, ? AS column_name, NULL::VARCHAR AS value, 'missing value' AS reason "
            f"FROM {src} WHERE _parse_error IS NULL AND {v} IS NULL"
        )
        params += [table.name, column.name]
        _add_rules(table, column, types, parts, params)
    by_name = {c.name: c for c in table.columns}
    for target, flag in table.required_if:
        when, flagged = by_name[target], by_name[flag]
        raw_type = types.get(target, TEXT)
        # A value that cannot be read is absent (`unreadable_checks`): missing here too.
        unreadable = [f"coalesce({c}, false)" for c, _ in _column_rules(when, raw_type)]
        absent = " OR ".join(["v IS NULL", *unreadable])
        parts.append(
            f"{_HEAD}, ? AS column_name, v::VARCHAR AS value, ? AS reason "
            f"FROM (SELECT *, {cell(when, raw_type)} AS v FROM {src}) "
            f"WHERE _parse_error IS NULL AND ({absent}) "
            f"AND {parsed(flagged, types.get(flag, TEXT))}"
        )
        params += [table.name, target, f"missing value (required when {flag} is true)"]
    return Query("\nUNION ALL\n".join(parts), params)


def unreadable_checks(table: Table, raw_types: dict[str, str] | None = None) -> Query | None:
    """The values of `raw.<table>`'s optional columns that cannot be read as their type without
    loss, one row per (row, column, rule), in the rows no parse error rejects: each is a
    warning, and staged absent. None: the table has no optional column."""
    types = raw_types or {}
    parts: list[str] = []
    params: list[object] = []
    for column in table.columns:
        if not column.required:
            _add_rules(table, column, types, parts, params)
    return Query("\nUNION ALL\n".join(parts), params) if parts else None


_HEAD = "SELECT ? AS table_name, _source_file AS source_file, _source_row AS source_row"


def _column_rules(column: Column, raw_type: str) -> list[tuple[str, str]]:
    """(failing condition over `v`, reason) for a column's present value, raw as `raw_type`."""
    return _typed_rules(column, raw_type) if raw_type != TEXT else _rules(column)


def _add_rules(
    table: Table,
    column: Column,
    types: dict[str, str],
    parts: list[str],
    params: list[object],
) -> None:
    """One SELECT a rule of `column` into `parts`, finding the rows that break it."""
    raw_type = types.get(column.name, TEXT)
    v = cell(column, raw_type)
    typed = raw_type != TEXT
    for condition, reason in _column_rules(column, raw_type):
        parts.append(
            f"{_HEAD}, ? AS column_name, v{'::VARCHAR' if typed else ''} AS value, "
            "? AS reason "
            f"FROM (SELECT *, {v} AS v FROM raw.{quote(table.name)}) "
            f"WHERE _parse_error IS NULL AND v IS NOT NULL AND ({condition})"
        )
        params += [table.name, column.name, reason]


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
