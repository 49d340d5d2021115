"""Shared fixtures: tiny inputs written to real files, the real pipeline on a real DuckDB."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest

from pipeline import db, ingest, transform
from pipeline.build import build
from pipeline.contract import TABLES_BY_NAME
from pipeline.settings import load_settings

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "data"

# A minimal valid catalog: one game, one set, two products, their SKUs and vocabularies.
BASE_TABLES: dict[str, list[dict[str, Any]]] = {
    "categories": [{"categoryId": 1, "name": "Magic"}],
    "groups": [{"groupId": 10, "categoryId": 1, "name": "Alpha"}],
    "products": [
        {
            "productId": 100,
            "categoryId": 1,
            "groupId": 10,
            "name": "Sol Ring",
            "rarity": "Uncommon",
            "number": "270",
        },
        {
            "productId": 101,
            "categoryId": 1,
            "groupId": 10,
            "name": "Black Lotus",
            "rarity": "Rare",
            "number": None,
        },
    ],
    "skus": [
        {"skuId": 1000, "productId": 100, "conditionId": 1, "languageId": 1, "printingId": 1},
        {"skuId": 1001, "productId": 100, "conditionId": 2, "languageId": 1, "printingId": 2},
        {"skuId": 1010, "productId": 101, "conditionId": 1, "languageId": 1, "printingId": 1},
    ],
    "conditions": [
        {"conditionId": 1, "name": "Near Mint"},
        {"conditionId": 2, "name": "Lightly Played"},
    ],
    "languages": [{"languageId": 1, "name": "English", "abbr": "EN"}],
    "printings": [
        {"printingId": 1, "name": "Normal", "foil": False},
        {"printingId": 2, "name": "Foil", "foil": True},
    ],
    "listings": [],
}


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return json.dumps(value)
    return str(value)


def write_table(input_dir: Path, table: str, rows: list[dict[str, Any]], fmt: str = "csv") -> Path:
    """Write one input table as CSV (all columns seen in `rows`) or NDJSON."""
    group = TABLES_BY_NAME[table].group
    path = input_dir / group / f"{table}.{fmt}"
    path.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "ndjson":
        path.write_text("".join(json.dumps(r, default=str) + "\n" for r in rows), encoding="utf-8")
        return path
    columns = (
        list(dict.fromkeys(k for r in rows for k in r)) or TABLES_BY_NAME[table].required_columns
    )
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(columns)
        for row in rows:
            writer.writerow([_cell(row.get(c)) for c in columns])
    return path


def write_inputs(input_dir: Path, **tables: list[dict[str, Any]]) -> Path:
    """The base catalog with some tables replaced or added; returns the input directory."""
    for name, rows in {**BASE_TABLES, **tables}.items():
        write_table(input_dir, name, rows)
    return input_dir


def run_pipeline(input_dir: Path) -> duckdb.DuckDBPyConnection:
    """Ingest and transform into an in-memory DuckDB, exactly as the build does."""
    con = db.connect()
    db.create_schemas(con)
    ingest.ingest_all(con, input_dir)
    transform.run_steps(con)
    return con


@pytest.fixture
def pipeline_for(tmp_path: Path) -> Iterator[Callable[..., duckdb.DuckDBPyConnection]]:
    """pipeline_for(listings=[...], ...) -> a connection with every table built."""
    cons: list[duckdb.DuckDBPyConnection] = []

    def make(**tables: list[dict[str, Any]]) -> duckdb.DuckDBPyConnection:
        input_dir = tmp_path / f"in{len(cons)}"
        con = run_pipeline(write_inputs(input_dir, **tables))
        cons.append(con)
        return con

    yield make
    for con in cons:
        con.close()


@pytest.fixture(scope="session")
def sample_build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The shipped sample built once into a temporary output directory."""
    output = tmp_path_factory.mktemp("sample-out")
    build(load_settings(None, input=SAMPLE, output=output))
    return output


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pipeline", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **(env or {})},
    )


def rows(con: duckdb.DuckDBPyConnection, sql: str, params: Any = None) -> list[tuple[Any, ...]]:
    return con.execute(sql, params).fetchall()


def site_files(site: Path) -> dict[str, Path]:
    """Every file of a site as a static host sees it (following the stores' symlinks)."""
    files = {}
    for folder, _, names in os.walk(site, followlinks=True):
        for name in names:
            path = Path(folder, name)
            files[path.relative_to(site).as_posix()] = path
    return dict(sorted(files.items()))
