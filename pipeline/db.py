"""Connections, the SQL file runner, the macros and the tables' comments. Only this module,
ingest and export touch the DuckDB file (docs/layout.md, "The SQL files")."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import duckdb

SQL_DIR = Path(__file__).resolve().parent.parent / "sql"

# DuckDB 2.x writes files older readers cannot open unless told otherwise. Analysts most likely
# run a DuckDB 1.x client, so the warehouse is written in the 1.2 storage format, which every
# DuckDB from 1.2.0 on reads. (docs/contract.md §1: analysts open the file with their own DuckDB.)
STORAGE_COMPATIBILITY_VERSION = "v1.2.0"

# A time as `json_time` writes it, and as the live service does: no zone, seconds always, a
# fraction only when it is not zero, without trailing zeros. The service's .NET writer keeps up
# to seven digits (`FFFFFFF`); the warehouse holds microseconds, so the pages have at most six.
TIME_PATTERN = r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{0,6}[1-9])?$"

# A writer checkpoints when it is done (a build's last statement is CHECKPOINT), not whenever
# the write-ahead log passes DuckDB's default of 16 MiB: at 10M listings that default set off
# checkpoints in the middle of ingest (2-3 s each, work the final checkpoint partly did again).
# Bulk writes go straight to the database file, so the log itself stays near 16 MB.
CHECKPOINT_THRESHOLD = "1GB"

SCHEMAS = {
    "raw": "Exports as loaded: every value as the text that was written, plus source file and row",
    "staging": "Typed and cleaned input tables: only rows that passed every contract check",
    "marts": "Per-store product summaries and joined listing facts",
    "export": "Fixed JSON fragments of the published pages, built once per catalog row",
    "meta": "Build runs, rejected rows, warnings and step timings",
    "history": "Each published night's market figures and store volumes, the last "
    "build.history_nights nights (views over OUTPUT/history/)",
}

# Temporary macros: parsing and JSON rules that every SQL file shares (`sql/macros.sql`, run
# as one batch). They are created on each connection and never stored in the warehouse file.
MACROS_FILE = SQL_DIR / "macros.sql"
MACROS = MACROS_FILE.read_text(encoding="utf-8")


def connect(
    path: Path | str = ":memory:",
    *,
    read_only: bool = False,
    memory_limit: str | None = None,
    threads: int | None = None,
    temp_directory: Path | None = None,
) -> duckdb.DuckDBPyConnection:
    config: dict[str, str | bool | int | float | list[str]] = {}
    if memory_limit:
        config["memory_limit"] = memory_limit
    if threads:
        config["threads"] = threads
    if temp_directory:
        config["temp_directory"] = str(temp_directory)
    if str(path) != ":memory:" and not read_only:
        config["storage_compatibility_version"] = STORAGE_COMPATIBILITY_VERSION
        config["checkpoint_threshold"] = CHECKPOINT_THRESHOLD
    con = duckdb.connect(str(path), read_only=read_only, config=config)
    con.execute(MACROS)
    return con


def create_schemas(con: duckdb.DuckDBPyConnection) -> None:
    """The layer schemas. DuckDB cannot comment a schema, so `meta.schema_doc` describes them."""
    for schema in SCHEMAS:
        con.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
    con.execute(
        "CREATE OR REPLACE TABLE meta.schema_doc (schema_name VARCHAR PRIMARY KEY, comment VARCHAR)"
    )
    con.executemany("INSERT INTO meta.schema_doc VALUES (?, ?)", list(SCHEMAS.items()))
    comment_table(
        con,
        "meta.schema_doc",
        "One row per schema of this warehouse, with what it holds",
        {"schema_name": "Schema name", "comment": "What the schema holds"},
    )


@dataclass(frozen=True)
class SqlFile:
    """A SQL file under sql/, named for what it builds: `marts/listing` -> marts.listing."""

    path: str

    @property
    def file(self) -> Path:
        return SQL_DIR / f"{self.path}.sql"

    @property
    def schema(self) -> str:
        return self.path.split("/")[0]

    @property
    def name(self) -> str:
        return self.path.split("/")[-1]

    @property
    def table(self) -> str:
        """The table the file builds: `marts/listing` -> `marts.listing`."""
        return f"{self.schema}.{self.name}"

    @property
    def order_by(self) -> str | None:
        """The columns of the file's closing `order by` line (the table's row order), if any."""
        last = self.sql.rstrip().splitlines()[-1]
        found = re.fullmatch(r"order by (.+)", last.strip(), re.IGNORECASE)
        return found.group(1) if found else None

    @property
    def sql(self) -> str:
        return read_sql(self.file)

    def includes(self, part: SqlFile) -> bool:
        """Whether the file includes `part` (`-- @include`)."""
        return part.path in _included(self.file)

    def sql_instead(self, part: SqlFile, other: SqlFile) -> str:
        """The file's text with `other` included in place of `part`."""
        return read_sql(self.file, ((part.path, other.path),))

    @property
    def table_comment(self) -> str:
        return header(self.file)[0]

    @property
    def column_comments(self) -> dict[str, str]:
        return header(self.file)[1]


# A line that includes another SQL file's text in place (CTEs that two queries share).
_INCLUDE = re.compile(r"^-- @include (\S+)$", re.MULTILINE)


@cache
def read_sql(file: Path, instead: tuple[tuple[str, str], ...] = ()) -> str:
    """A SQL file's text, each `-- @include <path>` line replaced by that file's text, or by the
    text of the file `instead` names in its place ((path, other path) pairs)."""
    text = file.read_text(encoding="utf-8")

    def included(line: re.Match[str]) -> str:
        path = dict(instead).get(line[1], line[1])
        return read_sql(SQL_DIR / f"{path}.sql", instead).rstrip("\n")

    return _INCLUDE.sub(included, text)


@cache
def _included(file: Path) -> frozenset[str]:
    """The paths a SQL file includes itself (not those its parts include)."""
    return frozenset(_INCLUDE.findall(file.read_text(encoding="utf-8")))


_COLUMN_DOC = re.compile(r"^--\s*@column\s+(\w+):\s*(.+)$")


@cache
def header(file: Path) -> tuple[str, dict[str, str]]:
    """(table comment, {column: comment}) from a SQL file's leading comment lines."""
    text: list[str] = []
    columns: dict[str, str] = {}
    for line in read_sql(file).splitlines():
        if not line.startswith("--"):
            break
        match = _COLUMN_DOC.match(line)
        if match:
            columns[match.group(1)] = match.group(2).strip()
        else:
            text.append(line.lstrip("-").strip())
    return " ".join(t for t in text if t), columns


def build_table(
    con: duckdb.DuckDBPyConnection, model: SqlFile, params: dict[str, object] | None = None
) -> int:
    """CREATE OR REPLACE TABLE <schema>.<name> AS <the file's SELECT>; returns its row count.
    Its comments are written with the warehouse's others (`pipeline.transform.document`)."""
    return rows_written(con, f"CREATE OR REPLACE TABLE {model.table} AS\n{model.sql}", params or {})


def create_index(con: duckdb.DuckDBPyConnection, model: SqlFile, column: str) -> None:
    """An ART index on a column of the table `model` builds."""
    name = f"{model.schema}_{model.name}_{column}"
    con.execute(f"CREATE INDEX IF NOT EXISTS {name} ON {model.table} ({quote(column)})")


def scalar(con: duckdb.DuckDBPyConnection, sql: str, params: object = None) -> Any:
    """The single value of a query. Fetches the whole result: DuckDB 2.x blocks the connection
    while an execute() result is only partly fetched."""
    rows = con.execute(sql, params).fetchall()
    return rows[0][0] if rows else None


def rows_written(con: duckdb.DuckDBPyConnection, sql: str, params: object = None) -> int:
    """Run a CREATE TABLE AS, INSERT or DELETE: DuckDB answers it with the count of rows it
    wrote or removed."""
    return int(scalar(con, sql, params))


def release_memory(con: duckdb.DuckDBPyConnection, limit: str) -> None:
    """Give the memory DuckDB keeps for its cache back to the system, before Python takes
    memory of its own: lowering the memory limit evicts, then the limit is set back to `limit`
    (what the connection was opened with: DuckDB shows its limit rounded, so it cannot be read
    back exactly)."""
    con.execute("SET memory_limit = '64MB'")
    con.execute(f"SET memory_limit = {literal(limit)}")


def count_rows(con: duckdb.DuckDBPyConnection, table: str) -> int:
    return int(scalar(con, f"SELECT count(*) FROM {table}") or 0)


def quote(identifier: str) -> str:
    """A SQL identifier, quoted (input files may name columns anything)."""
    return '"' + identifier.replace('"', '""') + '"'


def literal(text: str) -> str:
    """A SQL string literal, for the few statements that take no bind parameters."""
    return "'" + text.replace("'", "''") + "'"


def comment_table(
    con: duckdb.DuckDBPyConnection,
    target: str,
    table_comment: str,
    columns: dict[str, str],
    kind: str = "TABLE",
) -> None:
    """The table's and its columns' COMMENTs (columns it lacks are skipped), in one
    transaction."""
    existing = set(con.table(target).columns)
    run_in_one_transaction(con, comments(target, table_comment, columns, existing, kind))


def comments(
    target: str,
    table_comment: str,
    columns: dict[str, str],
    existing: set[str],
    kind: str = "TABLE",
) -> list[str]:
    """The COMMENT statements of a table and of those of `columns` it has (`existing`).
    COMMENT ON takes no bind parameters; comments come from the code and the SQL headers."""
    statements = [f"COMMENT ON {kind} {target} IS {literal(table_comment)}"]
    statements += [
        f"COMMENT ON COLUMN {target}.{quote(column)} IS {literal(comment)}"
        for column, comment in columns.items()
        if column in existing
    ]
    return statements


def run_in_one_transaction(con: duckdb.DuckDBPyConnection, statements: list[str]) -> None:
    """`statements` as one batch in one transaction (a commit each would cost twice the
    statements)."""
    con.begin()
    try:
        con.execute(";\n".join(statements))
    except BaseException:
        con.rollback()
        raise
    con.commit()
