"""The Ray tests' S3 server and local Ray cluster, started once a session (once a pytest-xdist
worker) and shared by the modules that ask: a cluster starts in seconds, and its workers, once
started and importing the pipeline, serve every later night."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

from tests.support.local_ray import local_cluster
from tests.support.s3 import S3Server, moto_server, pointed_at


@pytest.fixture(scope="session")
def ray_s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """The test S3 server of these modules, for the session: the local Ray cluster's processes
    hold its AWS_* settings from their start (`ray_cluster`). Each bucket has a name of its
    own (`S3Server.bucket`)."""
    log = tmp_path_factory.mktemp("ray-s3") / "requests.log"
    with moto_server(log) as endpoint:
        yield S3Server(endpoint, log)


@pytest.fixture(scope="module")
def s3(ray_s3: S3Server) -> Iterator[S3Server]:
    """The session's test S3 server (`ray_s3`), and, for the module, the AWS_* settings that
    point every client at it."""
    with pointed_at(ray_s3.endpoint):
        yield ray_s3


@pytest.fixture(scope="session")
def ray_cluster(ray_s3: S3Server, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A local Ray cluster of its own, of two CPUs, for the session, started with the test
    bucket's AWS_* settings in its environment: its raylet passes them to every worker it
    starts, the tests' own (whose job's `runtime_env` sets them too) and those of a driver that
    joins it by address, as a real cluster's nodes hold their own settings. Yields the path of
    the file that, when it exists, has one shard's worker of the tests' job killed."""
    trigger = tmp_path_factory.mktemp("ray") / "kill-a-shard"
    with ExitStack() as cluster:
        with pointed_at(ray_s3.endpoint):
            cluster.enter_context(local_cluster(trigger))
        yield trigger
