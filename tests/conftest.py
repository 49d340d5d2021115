"""Shared fixtures: tiny inputs written to real files, the real pipeline on a real DuckDB, the
shipped sample built once, the test S3 server. Their helpers are in tests/support/."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest

from pipeline.build import build
from pipeline.settings import load_settings
from tests.support.golden import pin_build_time
from tests.support.inputs import SAMPLE, build_sample_nights, write_inputs
from tests.support.runs import made_once_a_run, run_pipeline
from tests.support.s3 import S3Server, moto_server, pointed_at
from tests.support.servers import preview_server

pytest_plugins = ["tests.support.order"]  # the slow tests first

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
    """The shipped sample built once for the run (`made_once_a_run`), read only: its output."""

    def make(folder: Path) -> None:
        build(load_settings(None, input=SAMPLE, output=folder / "out"))

    return made_once_a_run(tmp_path_factory, "sample-build", make) / "out"


@pytest.fixture(scope="session")
def serve_port(sample_build: Path) -> Iterator[int]:
    """`pipeline serve` on the sample's build, one a session (a pytest-xdist worker) for every
    test that only asks it: its port."""
    with preview_server(sample_build) as port:
        yield port


@pytest.fixture(scope="session")
def sample_nights(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two nights of the shipped sample (`build_sample_nights`: card-cellar's prices up a
    dollar on the second), built once for the run, read only: their output."""

    def make(folder: Path) -> None:
        build_sample_nights(folder / "out", folder)

    return made_once_a_run(tmp_path_factory, "sample-nights", make) / "out"


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
