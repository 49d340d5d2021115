"""The publish tests' fixtures: the proxy in front of the test S3 server
(tests/support/proxy.py), and three tiny releases (tests/support/releases.py)."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
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
    """The three releases of tests/support/releases.py, built once, read only: under
    pytest-xdist once for every worker of the run, by the first that asks, as `sample_build`
    (tests/conftest.py) is."""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        return build_three_releases(tmp_path_factory.mktemp("releases"))
    run = tmp_path_factory.getbasetemp().parent  # the run's, shared by its workers
    folder, done = run / "three-releases", run / "three-releases.json"
    with (run / "three-releases.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.is_file():  # none yet, or a build that failed
            shutil.rmtree(folder, ignore_errors=True)
            made = build_three_releases(folder)
            done.write_text(json.dumps({name: str(path) for name, path in made.items()}))
    return {name: Path(path) for name, path in json.loads(done.read_text()).items()}
