"""The docs and the code do not drift apart: every example query of docs/analysts.md runs on
the sample build, and the README names every setting and every command."""

from __future__ import annotations

import re
from pathlib import Path

import duckdb
import pytest

from pipeline.cli import main
from pipeline.settings import ExportSettings, Settings

ROOT = Path(__file__).resolve().parent.parent
QUERIES = re.findall(r"```sql\n(.*?)```", (ROOT / "docs" / "analysts.md").read_text(), re.S)


def test_the_guide_has_a_dozen_queries() -> None:
    assert len(QUERIES) >= 12


@pytest.mark.parametrize("sql", QUERIES, ids=[q.splitlines()[0][3:40] for q in QUERIES])
def test_every_example_query_runs_on_the_sample(sample_build: Path, sql: str) -> None:
    con = duckdb.connect(str(sample_build / "warehouse.duckdb"), read_only=True)
    result = con.execute(sql).fetchall()
    con.close()
    if "meta.rejects" not in sql:  # the sample has no rejects; everything else has rows
        assert result, sql


def test_the_readme_names_every_setting_and_command() -> None:
    readme = (ROOT / "README.md").read_text()
    for name in [*Settings.model_fields, *ExportSettings.model_fields]:
        if name not in ("input", "output", "shard"):
            assert name in readme, name
    for command in main.commands:
        assert f"pipeline {command}" in readme, command


def test_the_example_settings_file_is_valid_and_complete(tmp_path: Path) -> None:
    from pipeline.settings import load_settings

    example = ROOT / "docs" / "pipeline.example.toml"
    settings = load_settings(example)
    assert settings.model_dump() == load_settings(None).model_dump()  # it states the defaults
    text = example.read_text()
    assert "\n[export]\n" in text
    for name in [*Settings.model_fields, *ExportSettings.model_fields]:
        if name != "export":
            assert re.search(rf"^#? ?{name} = ", text, re.M), name


def test_an_older_duckdb_opens_the_warehouse(sample_build: Path) -> None:
    """The file is written for DuckDB 1.2 and later (storage_compatibility_version)."""
    import subprocess

    python = ROOT / ".venv-duckdb1" / "bin" / "python"
    assert python.exists(), "run `make setup`: it installs DuckDB 1.2.2 beside the project"
    script = (
        "import duckdb, sys; con = duckdb.connect(sys.argv[1], read_only=True); "
        "print(duckdb.__version__, con.execute('SELECT count(*) FROM marts.listing').fetchall()[0][0])"
    )
    out = subprocess.run(
        [str(python), "-c", script, str((sample_build / "warehouse.duckdb").resolve())],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    con = duckdb.connect(str(sample_build / "warehouse.duckdb"), read_only=True)
    expected = con.execute("SELECT count(*) FROM marts.listing").fetchall()[0][0]
    con.close()
    assert out == ["1.2.2", str(expected)]


def test_build_history_is_carried_from_build_to_build(tmp_path: Path) -> None:
    from pipeline.build import build
    from pipeline.settings import load_settings
    from tests.conftest import write_inputs

    output = tmp_path / "out"
    ids = [
        build(load_settings(None, input=write_inputs(tmp_path / "in"), output=output)).build_id
        for _ in range(3)
    ]
    con = duckdb.connect(str(output / "warehouse.duckdb"), read_only=True)
    assert [
        r[0]
        for r in con.execute(
            "SELECT build_id FROM meta.build_run ORDER BY started_at, build_id"
        ).fetchall()
    ] == sorted(ids)
    con.close()
