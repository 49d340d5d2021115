"""Shared fixtures: tiny inputs written to real files, the real pipeline on a real DuckDB, the
shipped sample built once, the test S3 server. Their helpers are in tests/support/."""

from __future__ import annotations

import fcntl
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest

from pipeline.build import build
from pipeline.paths import CURRENT
from pipeline.settings import load_settings
from tests.support.golden import pin_build_time
from tests.support.inputs import SAMPLE, build_sample_nights, write_inputs
from tests.support.runs import run_pipeline
from tests.support.s3 import S3Server, moto_server, pointed_at

pin_build_time()  # the same input, the same site: the bulk index's builtAt included


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


@pytest.fixture(scope="session")
def sample_nights(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two nights of the shipped sample (`build_sample_nights`: card-cellar's prices up a
    dollar on the second) in a temporary output directory, read only; made once for every
    worker of the run, as `sample_build` is."""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        work = tmp_path_factory.mktemp("sample-nights")
        return build_sample_nights(work / "out", work)
    run = tmp_path_factory.getbasetemp().parent
    work = run / "sample-nights"
    with (run / "sample-nights.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (work / "done").is_file():
            shutil.rmtree(work, ignore_errors=True)
            build_sample_nights(work / "out", work)
            (work / "done").touch()
    return work / "out"


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """The test S3 server, started once a session (once a pytest-xdist worker) and shared by
    every module that asks: each bucket has a name of its own (`S3Server.bucket`)."""
    log = tmp_path_factory.mktemp("s3") / "requests.log"
    with moto_server(log) as endpoint:
        yield S3Server(endpoint, log)


@pytest.fixture(scope="module")
def s3(s3_server: S3Server) -> Iterator[S3Server]:
    """The session's test S3 server, and, for the module, the AWS_* settings that point every
    client at it."""
    with pointed_at(s3_server.endpoint):
        yield s3_server
