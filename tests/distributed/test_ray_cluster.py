"""`pipeline ray-build` and its cluster, from the command line, to the test bucket: a local
cluster of its own even when `ray start` left one running on the machine; no process of it
left behind when the driver is killed; a cluster with token authentication joined by its
address, or refused with one line that says what to set; a task that cannot be run in its
retries is a handled failure (exit 1, one line)."""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from pipeline.distributed.reaper import Processes, descendants
from pipeline.serve.reader import BucketReader
from pipeline.settings import ENV_NESTING, ENV_PREFIX
from tests.support.bucket import FEW_PAGES
from tests.support.inputs import ROOT, SAMPLE
from tests.support.s3 import S3Server

RAY = Path(sys.executable).parent / "ray"
# A Ray installation's files: its sockets' paths must stay short (a Unix socket's path is at
# most 107 bytes), so not under pytest's tmp_path.
SHORT_TMP = "/tmp"


def _alive(processes: Processes) -> Processes:
    """Those of `processes` still running (the same start time, not a zombie)."""
    now = descendants(set(processes))
    return {pid: start for pid, start in processes.items() if now.get(pid) == start}


def _kill(processes: Processes) -> None:
    for pid in _alive(processes):
        os.kill(pid, signal.SIGKILL)


@pytest.fixture
def ray_tmp() -> Iterator[Path]:
    """A temporary directory of Ray's own (TMPDIR), short enough for its sockets."""
    with tempfile.TemporaryDirectory(prefix="r", dir=SHORT_TMP) as directory:
        yield Path(directory)


def _env(ray_tmp: Path, **extra: str) -> dict[str, str]:
    return {"TMPDIR": str(ray_tmp), "RAY_USAGE_STATS_ENABLED": "0", **extra}


# The export settings of these builds, in the environment: `FEW_PAGES` (what a build publishes
# is not what these tests check; each page is a PUT, rendered and uploaded by a Ray worker).
FEW_PAGES_ENV = {
    f"{ENV_PREFIX}EXPORT{ENV_NESTING}{name.upper()}": json.dumps(value)
    for name, value in FEW_PAGES.items()
}


def _build(ray_tmp: Path, url: str, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """`pipeline ray-build` of the sample to the bucket `url`, materialising `FEW_PAGES`, in an
    environment with no token mode but what `env` sets."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("RAY_AUTH")}
    command = ["ray-build", "--input", str(SAMPLE), "--to", url, *args]
    return subprocess.run(
        [sys.executable, "-m", "pipeline", *command],
        capture_output=True,
        text=True,
        timeout=300,
        env={**environment, **_env(ray_tmp), **FEW_PAGES_ENV, **env},
    )


# Put on the PYTHONPATH of the token cluster (`head`), and so of its Ray workers (they inherit
# its environment): while the trigger file exists, a shard's task kills its own worker as it
# starts its site (in its scratch folder).
KILL_EVERY_SHARD = """
import os, signal, sys

def _hook(event, args):
    path = str(args[0]) if args else ""
    if event == "os.mkdir" and path.endswith("/site") and "/pipeline-shard-" in path:
        if os.path.exists(os.environ.get("PIPELINE_TEST_KILL_EVERY_SHARD", "")):
            os.kill(os.getpid(), signal.SIGKILL)

sys.addaudithook(_hook)
"""


@dataclass
class Head:
    """A cluster that `ray start` left running, with token authentication."""

    tmp: Path  # its TMPDIR
    address: str  # its GCS
    token: str
    kill_every_shard: Path  # while this file exists, every shard's task kills its worker


@pytest.fixture(scope="module")
def head(s3: S3Server) -> Iterator[Head]:
    """`ray start`'s cluster, whose workers reach the test bucket (their environment is its),
    and import `KILL_EVERY_SHARD` (through the PYTHONPATH of the cluster's environment)."""
    with tempfile.TemporaryDirectory(prefix="r", dir=SHORT_TMP) as directory:
        tmp, token = Path(directory), secrets.token_hex(16)
        hooks = tmp / "hooks"
        hooks.mkdir()
        (hooks / "sitecustomize.py").write_text(KILL_EVERY_SHARD)
        trigger = tmp / "kill-every-shard"
        hooked = {
            "PYTHONPATH": f"{hooks}{os.pathsep}{ROOT}",
            "PIPELINE_TEST_KILL_EVERY_SHARD": str(trigger),
        }
        env = {**os.environ, **_env(tmp, RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=token, **hooked)}
        process, address = _start_head(env, tmp / "ray" / "ray_current_cluster")
        cluster: Processes = {}
        try:
            cluster = descendants({process.pid})
            yield Head(tmp, address, token, trigger)
            assert process.poll() is None and set(_alive(cluster)) == set(cluster)
        finally:
            cluster.update(descendants({process.pid}))
            process.kill()
            process.wait()
            _kill(cluster)


def _start_head(env: dict[str, str], written: Path) -> tuple[subprocess.Popen[bytes], str]:
    """`ray start --head` and the address it wrote to `written` (what `ray.init()` reads).
    Ray starts a Ray Client server with every head (ray[client] is installed) and takes no port
    0 for it: it gets a port the system had free, and, should another process take that port
    before Ray binds it (the head then exits), another, up to three times."""
    for _ in range(3):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        process = subprocess.Popen(
            [
                str(RAY),
                "start",
                "--head",
                "--block",
                "--port=0",
                "--num-cpus=1",
                "--include-dashboard=false",
                # No autoscaler's monitor, no log monitor: the tests' drivers read no worker's
                # output (log_to_driver=False) and nothing scales.
                "--no-monitor",
                "--include-log-monitor=false",
                "--disable-usage-stats",
                f"--ray-client-server-port={port}",
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 120
        while not written.exists() and process.poll() is None:
            assert time.monotonic() < deadline, "ray start did not come up"
            time.sleep(0.2)
        if written.exists():
            return process, written.read_text().strip()
    raise AssertionError("ray start failed three times")


def _sessions(tmp: Path) -> set[Path]:
    return set((tmp / "ray").glob("session_2*"))


@pytest.mark.slow
def test_with_no_address_the_build_starts_a_cluster_of_its_own(
    head: Head, s3: S3Server, tmp_path: Path
) -> None:
    """`ray start` left a cluster running on the machine (Ray's `ray.init()` would join it): the
    build starts a local cluster of its own, and leaves the other one alone. It says what it
    published in one line."""
    sessions = _sessions(head.tmp)
    url = s3.bucket("own-cluster")
    output = tmp_path / "out"
    done = _build(head.tmp, url, "--output", str(output))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("published build ") and done.stdout.count("\n") == 1
    assert done.stdout.endswith(f" -> {output} and {url}\n"), done.stdout
    assert len(_sessions(head.tmp) - sessions) == 1  # a session of its own


@pytest.mark.slow
def test_an_address_with_token_authentication(head: Head, s3: S3Server, tmp_path: Path) -> None:
    """A cluster with token authentication, named by its address: without the token mode, one
    line that says what to set (the first build of
    `test_a_named_cluster_is_refused_before_anything_starts_or_said_unreachable`); with a token
    it does not hold, one line that says so; with its token, the build runs there, and says
    what it published in one line."""
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
    head: Head, ray_tmp: Path, s3: S3Server, tmp_path: Path
) -> None:
    """An address with the token mode unsaid (that of a cluster with token authentication):
    the one line that says what to set, and nothing else, at once: Ray was never started or
    joined (it would try for 20 s, with a warning a try). With the mode said, a cluster that
    cannot be reached (a port that refuses connections) is a connection failure in one line,
    not a token problem."""
    output, url = str(tmp_path / "out"), s3.bucket("unreachable")
    refused = _build(ray_tmp, url, "--address", head.address, "--output", output)
    assert refused.returncode == 1, refused.stderr
    assert _lines(refused) == [_not_joined(head.address)]
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
        env={**os.environ, **_env(ray_tmp)},
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
        names = {_name(pid) for pid in cluster}
        assert {"ray::DashboardAgent", "ray::RuntimeEnvAgent"} <= names, names
        driver.kill()
        driver.wait()
        deadline = time.monotonic() + 20
        while _alive(cluster) and time.monotonic() < deadline:
            time.sleep(0.25)
        assert {_name(pid) for pid in _alive(cluster)} == set()
    finally:
        driver.kill()
        driver.wait()
        _kill(cluster)


def _name(pid: int) -> str:
    """A process's command line, as `ps` shows it (Ray's processes rename themselves)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode()
    except OSError:
        return ""


@pytest.mark.slow
def test_a_task_out_of_retries_is_a_handled_failure(
    head: Head, s3: S3Server, tmp_path: Path
) -> None:
    """Every attempt of a shard's task dies with its worker (on the token cluster, joined by
    its address, while its workers' hook is armed): the build fails with one line and exit 1
    (not a crash), and publishes nothing."""
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
