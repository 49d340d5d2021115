"""The project's structure holds: every SQL file runs exactly once, every table is documented."""

from __future__ import annotations

from pathlib import Path

from pipeline.db import SQL_DIR
from pipeline.steps import all_sql_files
from tests.conftest import rows


def test_every_sql_file_is_in_the_step_list_exactly_once() -> None:
    on_disk = sorted(
        p.relative_to(SQL_DIR).with_suffix("").as_posix() for p in SQL_DIR.rglob("*.sql")
    )
    listed = [f.path for f in all_sql_files()]
    assert len(listed) == len(set(listed)), "a SQL file is listed twice"
    assert sorted(listed) == on_disk


def test_sql_files_only_select() -> None:
    for file in SQL_DIR.rglob("*.sql"):
        text = file.read_text().lower()
        for word in ("create ", "insert ", "copy ", "delete ", "update ", "drop "):
            code = "\n".join(line.split("--")[0] for line in text.splitlines())
            assert word not in code, f"{file}: SQL files hold one SELECT, no {word.strip()}"


def test_every_table_and_column_carries_a_comment(sample_build: Path) -> None:
    import duckdb

    con = duckdb.connect(str(sample_build / "warehouse.duckdb"), read_only=True)
    tables = rows(
        con,
        "SELECT schema_name, table_name, comment FROM duckdb_tables() "
        "WHERE database_name = 'warehouse' ORDER BY ALL",
    )
    assert {t[0] for t in tables} == {"raw", "staging", "marts", "export", "meta"}
    assert [t for t in tables if not t[2]] == []
    columns = rows(
        con,
        "SELECT schema_name, table_name, column_name FROM duckdb_columns() "
        "WHERE database_name = 'warehouse' AND (comment IS NULL OR comment = '') ORDER BY ALL",
    )
    assert columns == []
    con.close()
