"""The real pipeline run for a test (in memory, or as the command line), and what a run leaves
read back: query rows, a site's files and their hashes, a published output's state; a
small good build to fail against."""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import pytest

from pipeline import db, ingest, transform
from pipeline.build import build
from pipeline.settings import load_settings
from tests.support.inputs import write_inputs


def run_pipeline(input_dir: Path) -> duckdb.DuckDBPyConnection:
    """Ingest and transform into an in-memory DuckDB, exactly as the build does."""
    con = db.connect()
    db.create_schemas(con)
    ingest.ingest_all(con, input_dir)
    transform.run_steps(con)
    return con


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`pipeline ARGS...` in a process of its own (with `env` added to the environment)."""
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


def site_hashes(site: Path) -> dict[str, str]:
    """path -> SHA-256 (hex) of every file of a site, as read from the files."""
    return {
        name: hashlib.sha256(path.read_bytes()).hexdigest()
        for name, path in site_files(site).items()
    }


def published_state(output: Path) -> dict[str, str]:
    """What a reader sees: the current release, the warehouse's bytes, every site file's hash."""
    state = {"current": os.readlink(output / "current")}
    state["warehouse"] = hashlib.sha256((output / "warehouse.duckdb").read_bytes()).hexdigest()
    return {**state, **site_hashes(output / "site")}


def good_build(folder: Path) -> Path:
    """A published build of one store's one listing, in `folder`/out."""
    output = folder / "out"
    listings = [{"storeKey": "s1", "skuId": 1000, "price": "1.00", "quantity": 1}]
    build(
        load_settings(None, input=write_inputs(folder / "good", listings=listings), output=output)
    )
    return output


def made_once_a_run(
    tmp_path_factory: pytest.TempPathFactory, name: str, make: Callable[[Path], object]
) -> Path:
    """A folder where `make(folder)` ran once for the whole run, for tests that only read it:
    under pytest-xdist by the first worker that asks, the others waiting on a lock in the run's
    temporary folder (as pytest-xdist's guide shows); a `make` that failed runs again."""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        folder = tmp_path_factory.mktemp(name)
        make(folder)
        return folder
    run = tmp_path_factory.getbasetemp().parent  # the run's, shared by its workers
    folder, done = run / name, run / f"{name}.done"
    with (run / f"{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.is_file():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            make(folder)
            done.touch()
    return folder
