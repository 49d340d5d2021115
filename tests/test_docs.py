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
