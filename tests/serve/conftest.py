"""The serving tests' fixtures: `pipeline serve` and nginx on the sample build, started once a
session (a pytest-xdist worker; tests/support/servers.py), the sample as the reference model
reads it, and a client that keeps its connections to them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import reference
from tests.support.inputs import SAMPLE
from tests.support.servers import Client, running_nginx


@pytest.fixture(scope="session")
def sample_data() -> reference.Data:
    """The shipped sample as the reference model reads it, read once: the tests only ask it."""
    return reference.load_directory(SAMPLE)


@pytest.fixture(scope="session")
def nginx_socket(
    sample_build: Path, serve_port: int, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Path]:
    """nginx on the sample's site in front of `serve_port`, one for every test that only asks it."""
    with running_nginx(
        tmp_path_factory.mktemp("nginx"), sample_build / "site", f"127.0.0.1:{serve_port}"
    ) as sock:
        yield sock


@pytest.fixture
def client() -> Iterator[Client]:
    """Requests on connections kept open for the test (one to each server), closed after it."""
    kept = Client()
    yield kept
    kept.close()
