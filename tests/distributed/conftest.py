"""The Ray tests' local Ray cluster, started once a session (once a pytest-xdist worker) and
shared by the modules that ask: a cluster starts in seconds, and its workers, once started and
importing the pipeline, serve every later night. Its processes reach the session's test S3
server (`s3_server`, tests/conftest.py)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

from tests.support.local_ray import local_cluster
from tests.support.s3 import S3Server, pointed_at


@pytest.fixture(scope="session")
def ray_cluster(s3_server: S3Server, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A local Ray cluster of its own, of two CPUs, for the session, started with the test
    bucket's AWS_* settings in its environment: its raylet passes them to every worker it
    starts, the tests' own (whose job's `runtime_env` sets them too) and those of a driver that
    joins it by address, as a real cluster's nodes hold their own settings. Yields the path of
    the file that, when it exists, has one shard's worker of the tests' job killed."""
    trigger = tmp_path_factory.mktemp("ray") / "kill-a-shard"
    with ExitStack() as cluster:
        with pointed_at(s3_server.endpoint):
            cluster.enter_context(local_cluster(trigger))
        yield trigger
