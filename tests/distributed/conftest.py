"""The Ray tests' local Ray cluster, started once a session (once a pytest-xdist worker) and
shared by the modules that ask: a cluster starts in seconds, and its workers, once started and
importing the pipeline, serve every later night. It is what `ray start` leaves running on a
machine, with token authentication (tests/support/local_ray.py); this process joins it as a
driver. Its processes reach the session's test S3 server (`s3_server`, tests/conftest.py)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack

import pytest

from tests.support.local_ray import Cluster, local_cluster
from tests.support.s3 import S3Server, pointed_at


@pytest.fixture(scope="session")
def ray_cluster(s3_server: S3Server) -> Iterator[Cluster]:
    """The local cluster, of one CPU, started with the test bucket's AWS_* settings in its
    environment: its raylet passes them to every worker it starts, of this process's job and
    of a driver that joins it by address, as a real cluster's nodes hold their own settings."""
    with ExitStack() as stack:
        with pointed_at(s3_server.endpoint):
            cluster = stack.enter_context(local_cluster(cpus=1))
        yield cluster
