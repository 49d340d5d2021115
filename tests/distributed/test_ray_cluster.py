"""`pipeline ray-build` and its cluster, from the command line, to the test bucket: a local
cluster of its own even when `ray start` left one running on the machine; no process of it
left behind when the driver is killed; a cluster with token authentication joined by its
address, or refused with one line that says what to set; a task that cannot be run in its
retries is a handled failure (exit 1, one line). The cluster `ray start` left running, with
token authentication, is the session's (`ray_cluster`, tests/distributed/conftest.py)."""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pipeline.distributed.reaper import Processes, descendants
from pipeline.serve.reader import BucketReader
from pipeline.settings import ENV_NESTING, ENV_PREFIX
from tests.support.bucket import FEW_PAGES
from tests.support.inputs import SAMPLE
from tests.support.local_ray import (
    AGENTS,
    SHORT_TMP,
    Cluster,
    alive,
    kill,
    process_name,
    ray_env,
)
from tests.support.s3 import S3Server


@pytest.fixture
def ray_tmp() -> Iterator[Path]:
    """A temporary directory of Ray's own (TMPDIR), short enough for its sockets."""
    with tempfile.TemporaryDirectory(prefix="r", dir=SHORT_TMP) as directory:
        yield Path(directory)


# The export settings of these builds, in the environment: `FEW_PAGES` (what a build publishes
# is not what these tests check; each page is a PUT, rendered and uploaded by a Ray worker).
FEW_PAGES_ENV = {
    f"{ENV_PREFIX}EXPORT{ENV_NESTING}{name.upper()}": json.dumps(value)
    for name, value in FEW_PAGES.items()
}


def _without_token_mode() -> dict[str, str]:
    """This process's environment without the session cluster's token mode (its driver's)."""
    return {k: v for k, v in os.environ.items() if not k.startswith("RAY_AUTH")}


def _build(ray_tmp: Path, url: str, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """`pipeline ray-build` of the sample to the bucket `url`, materialising `FEW_PAGES`, in an
    environment with no token mode but what `env` sets."""
    command = ["ray-build", "--input", str(SAMPLE), "--to", url, *args]
    return subprocess.run(
        [sys.executable, "-m", "pipeline", *command],
        capture_output=True,
        text=True,
        timeout=300,
        env={**_without_token_mode(), **ray_env(ray_tmp), **FEW_PAGES_ENV, **env},
    )


def _sessions(tmp: Path) -> set[Path]:
    return set((tmp / "ray").glob("session_2*"))


@pytest.mark.slow
def test_with_no_address_the_build_starts_a_cluster_of_its_own(
    ray_cluster: Cluster, s3: S3Server, tmp_path: Path
) -> None:
    """`ray start` left a cluster running on the machine (Ray's `ray.init()` would join it): the
    build starts a local cluster of its own, and leaves the other one alone (every process of
    it but its workers, which come and go, still running). It says what it published in one
    line."""
    head = ray_cluster
    sessions, nodes = _sessions(head.tmp), head.nodes_processes()
    assert head.process.pid in nodes and len(nodes) > 1
    url = s3.bucket("own-cluster")
    output = tmp_path / "out"
    done = _build(head.tmp, url, "--output", str(output))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("published build ") and done.stdout.count("\n") == 1
    assert done.stdout.endswith(f" -> {output} and {url}\n"), done.stdout
    assert len(_sessions(head.tmp) - sessions) == 1  # a session of its own
    assert alive(nodes) == nodes


@pytest.mark.slow
def test_an_address_with_token_authentication(
    ray_cluster: Cluster, s3: S3Server, tmp_path: Path
) -> None:
    """A cluster with token authentication, named by its address: without the token mode, one
    line that says what to set (the first build of
    `test_a_named_cluster_is_refused_before_anything_starts_or_said_unreachable`); with a token
    it does not hold, one line that says so; with its token, the build runs there, and says
    what it published in one line."""
    head = ray_cluster
    output, url = str(tmp_path / "out"), s3.bucket("token")
    # A token the cluster does not hold: said as such (Ray's tries cut short: QUICK).
    wrong = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(16), **QUICK}
    refused = _build(head.tmp, url, "--address", head.address, "--output", output, **wrong)
    assert refused.returncode == 1, refused.stderr
    line = refused.stderr.strip().splitlines()[-1]
    assert line.startswith(
        f"ray-build failed: engine ray: the cluster at {head.address} refused the build's token: "
    ), line

    sessions = _sessions(head.tmp)
    token = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": head.token}
    # The driver joins by the cluster's own address, not through Ray Client: the server Ray
    # starts for each client missed its start-up deadline now and then under load
    # ("Initialization failure from server"), a Ray timing no setting here moves.
    done = _build(head.tmp, url, "--address", head.address, "--output", output, **token)
    assert done.returncode == 0, done.stderr
    assert _sessions(head.tmp) == sessions  # on that cluster
    assert (tmp_path / "out" / "current").is_dir()
    assert done.stdout.startswith("published build ") and done.stdout.count("\n") == 1
    assert done.stdout.endswith(f" -> {output} and {url}\n"), done.stdout


# Ray's tries to reach a cluster's GCS, and how long each waits: one try of 2 s (Ray's own:
# 20 tries, each of up to 35 s against an address that does not answer).
QUICK = {
    "RAY_gcs_server_port_wait_time_s": "1",
    "RAY_gcs_rpc_server_connect_timeout_s": "1",
    "RAY_py_gcs_connect_timeout_s": "2",
}


def _not_joined(address: str) -> str:
    return (
        f"ray-build failed: engine ray: the cluster at {address} was not joined: RAY_AUTH_MODE "
        "is not set. A cluster with token authentication needs RAY_AUTH_MODE=token in the build's "
        "environment, and the cluster's token in ~/.ray/auth_token, RAY_AUTH_TOKEN_PATH or "
        "RAY_AUTH_TOKEN; one without it, RAY_AUTH_MODE=disabled"
    )


def _lines(done: subprocess.CompletedProcess[str]) -> list[str]:
    """What the build wrote on stderr besides its progress (one JSON object a line)."""
    return [line for line in done.stderr.splitlines() if not line.startswith("{")]


def test_a_named_cluster_is_refused_before_anything_starts_or_said_unreachable(
    ray_cluster: Cluster, ray_tmp: Path, s3: S3Server, tmp_path: Path
) -> None:
    """An address with the token mode unsaid (that of a cluster with token authentication):
    the one line that says what to set, and nothing else, at once: Ray was never started or
    joined (it would try for 20 s, with a warning a try). With the mode said, a cluster that
    cannot be reached (a port that refuses connections) is a connection failure in one line,
    not a token problem."""
    output, url = str(tmp_path / "out"), s3.bucket("unreachable")
    refused = _build(ray_tmp, url, "--address", ray_cluster.address, "--output", output)
    assert refused.returncode == 1, refused.stderr
    assert _lines(refused) == [_not_joined(ray_cluster.address)]
    assert not (ray_tmp / "ray").exists()  # no session of Ray's, started or joined
    with socket.socket() as nobody:  # bound, never listening: a connection is refused
        nobody.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{nobody.getsockname()[1]}"
        unreachable = _build(
            ray_tmp,
            url,
            "--address",
            address,
            "--output",
            output,
            RAY_AUTH_MODE="disabled",
            **QUICK,
        )
    assert unreachable.returncode == 1, unreachable.stderr
    line = unreachable.stderr.strip().splitlines()[-1]
    assert line.startswith(
        f"ray-build failed: engine ray: cannot connect to the cluster at {address}: "
    )
    assert "token" not in line, line


@pytest.mark.slow
def test_a_killed_driver_leaves_no_process_of_its_cluster(
    ray_tmp: Path, s3: S3Server, tmp_path: Path
) -> None:
    """SIGKILL the driver in the middle of its shards: within seconds, no process of its local
    cluster is left (Ray alone leaves its agents for a minute)."""
    driver = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pipeline",
            "ray-build",
            "--to",
            s3.bucket("killed-driver"),
            "--shards",
            "2",
            "--input",
            str(SAMPLE),
            "--output",
            str(tmp_path / "out"),
        ],
        env={**_without_token_mode(), **ray_env(ray_tmp)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    cluster: Processes = {}
    try:
        assert driver.stderr is not None
        for line in driver.stderr:  # the progress, one JSON line an event
            if '"stage_started","stage":"shards"' in line:
                break
        else:
            pytest.fail("the build ended before its shards")
        cluster = descendants({driver.pid})
        del cluster[driver.pid]
        names = {process_name(pid) for pid in cluster}
        assert names >= AGENTS, names
        driver.kill()
        driver.wait()
        deadline = time.monotonic() + 20
        while alive(cluster) and time.monotonic() < deadline:
            time.sleep(0.25)
        assert {process_name(pid) for pid in alive(cluster)} == set()
    finally:
        driver.kill()
        driver.wait()
        kill(cluster)


@pytest.mark.slow
def test_a_task_out_of_retries_is_a_handled_failure(
    ray_cluster: Cluster, s3: S3Server, tmp_path: Path
) -> None:
    """Every attempt of a shard's task dies with its worker (on the token cluster, joined by
    its address, while its workers' hook is armed): the build fails with one line and exit 1
    (not a crash), and publishes nothing."""
    head = ray_cluster
    output, url = tmp_path / "out", s3.bucket("out-of-retries")
    token = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": head.token}
    head.kill_every_shard.touch()
    try:
        failed = _build(
            head.tmp, url, "--address", head.address, "--shards", "1", "--output", str(output),
            PIPELINE_RAY__RETRIES="1", **token,
        )  # fmt: skip
    finally:
        head.kill_every_shard.unlink()
    assert failed.returncode == 1, failed.stderr
    last = failed.stderr.strip().splitlines()[-1]
    assert last.startswith(
        "ray-build failed: a task of the build could not be run (WorkerCrashedError, after "
        "ray.retries = 1): "
    ), last
    assert last.endswith("Nothing was published."), last
    assert not (output / "current").exists()
    assert BucketReader(url).snapshot() is None  # no pointer
