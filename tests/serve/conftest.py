"""The serving tests' fixtures: `pipeline serve`, nginx and nginx in front of a bucket on the
sample build, started once a session (a pytest-xdist worker; tests/support/servers.py), the
sample as the reference model reads it, and a client that keeps its connections to them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from pipeline.paths import NGINX_CONF
from pipeline.publish.objectstore import publish_release
from pipeline.serve.reader import write_nginx
from pipeline.settings import ServeSettings
from tests.support import reference
from tests.support.inputs import SAMPLE
from tests.support.s3 import S3Server, pointed_at, readable
from tests.support.servers import Client, nginx_on, running_nginx


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


@pytest.fixture(scope="session")
def bucket_nginx_socket(
    s3_server: S3Server,
    sample_build: Path,
    serve_port: int,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Path]:
    """nginx in front of a readable bucket holding the sample's build (`pipeline nginx-bucket`),
    `serve_port` its live upstream, one for every test that only asks it: its socket."""
    folder = tmp_path_factory.mktemp("bucket-nginx")
    sock = folder / "nginx.sock"
    with pointed_at(s3_server.endpoint):
        url = s3_server.bucket("serve-sample")
        readable(s3_server, url)
        publish_release((sample_build / "current").resolve(), url)
        limits = ServeSettings(nginx_cache=folder / "cache")
        assert write_nginx(url, folder, f"unix:{sock}", f"127.0.0.1:{serve_port}", limits)
    with nginx_on(folder, folder / NGINX_CONF, sock):
        yield sock
