"""Shared fixtures: tiny inputs written to real files, the real pipeline on a real DuckDB."""

from __future__ import annotations

import csv
import fcntl
import json
import os
import re
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote

import duckdb
import pytest

from pipeline import db, ingest, transform
from pipeline.build import build
from pipeline.contract import TABLES_BY_NAME
from pipeline.paths import CURRENT
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
    """The shipped sample built once into a temporary output directory, read only: under
    pytest-xdist once for every worker of the run, by the first that asks (the others wait on
    a lock in the run's temporary folder), as pytest-xdist's guide shows."""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        output = tmp_path_factory.mktemp("sample-out")
        build(load_settings(None, input=SAMPLE, output=output))
        return output
    run = tmp_path_factory.getbasetemp().parent  # the run's, shared by its workers
    output = run / "sample-out"
    with (run / "sample-out.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (output / CURRENT).is_symlink():  # none yet, or a build that failed
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


@dataclass
class S3Server:
    endpoint: str
    log: Path

    def bucket(self, name: str) -> str:
        """Create a bucket; its URL with the prefix `site`."""
        request = urllib.request.Request(f"{self.endpoint}/{name}", method="PUT")
        urllib.request.urlopen(request, timeout=30).read()
        return f"s3://{name}/site"

    def puts(self, url: str) -> list[str]:
        """The keys (under the URL's prefix) of every PUT the server answered, in order."""
        path = "/" + url.removeprefix("s3://") + "/"
        found = re.findall(r'"PUT (\S+) HTTP/1\.1" 200', self.log.read_text())
        return [unquote(p)[len(path) :] for p in found if unquote(p).startswith(path)]

    def lists(self, url: str) -> list[str]:
        """The prefixes (under the URL's prefix; "" for all of it) of every listing of the
        URL's bucket the server answered, in order."""
        bucket, _, base = url.removeprefix("s3://").partition("/")
        found = re.findall(rf'"GET /{bucket}\?(\S+) HTTP/1\.1" 200', self.log.read_text())
        queries = [parse_qs(q, keep_blank_values=True) for q in found if "list-type=2" in q]
        return [q.get("prefix", [""])[0].removeprefix(f"{base}/") for q in queries]


@pytest.fixture(scope="module")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """moto's S3 server on 127.0.0.1, on a port it picks itself (read from its log line)."""
    log = tmp_path_factory.mktemp("s3") / "requests.log"
    with log.open("w") as stderr:
        server = subprocess.Popen(
            [Path(sys.executable).parent / "moto_server", "-H", "127.0.0.1", "-p", "0"],
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
    try:
        deadline = datetime.now(UTC) + timedelta(seconds=60)
        while not (port := re.search(r"Running on http://127\.0\.0\.1:(\d+)", log.read_text())):
            assert server.poll() is None and datetime.now(UTC) < deadline, log.read_text()
            threading.Event().wait(0.05)
        endpoint = f"http://127.0.0.1:{port[1]}"
        with pytest.MonkeyPatch.context() as env:
            for name, value in {
                "AWS_ENDPOINT_URL": endpoint,
                "AWS_ALLOW_HTTP": "true",
                "AWS_REGION": "us-east-1",
                "AWS_ACCESS_KEY_ID": "test",
                "AWS_SECRET_ACCESS_KEY": "test",
            }.items():
                env.setenv(name, value)
            yield S3Server(endpoint, log)
    finally:
        server.terminate()
        server.wait(timeout=30)
