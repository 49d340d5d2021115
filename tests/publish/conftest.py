"""The publish tests' fixtures: the proxy in front of the test S3 server
(tests/support/proxy.py), and three tiny releases (tests/support/releases.py)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.proxy import Proxy
from tests.support.releases import build_three_releases
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
    """The three releases of tests/support/releases.py, built once. Read only."""
    return build_three_releases(tmp_path_factory.mktemp("releases"))
