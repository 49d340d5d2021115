"""The publish tests' fixtures: the proxy in front of the test S3 server
(tests/support/proxy.py), and three tiny releases (tests/support/releases.py)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from pipeline.paths import published_release
from tests.support.proxy import Proxy
from tests.support.releases import INPUTS, build_three_releases
from tests.support.runs import made_once_a_run
from tests.support.s3 import S3Server


@pytest.fixture
def proxy(s3: S3Server) -> Iterator[Proxy]:
    server = Proxy(s3.endpoint)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server
    finally:
        server.victim.resume.set()
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="session")
def three_releases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The three releases of tests/support/releases.py, built once for the run
    (`made_once_a_run`), read only: each output's current release, by name."""
    folder = made_once_a_run(tmp_path_factory, "three-releases", build_three_releases)
    made = {}
    for name in INPUTS:
        release = published_release(folder / name)
        assert release is not None, f"release {name} was not published"
        made[name] = release
    return made
