"""The Ray tests' local cluster: what `ray start --head` leaves running on a machine, with token
authentication, in a short temporary folder of its own, and the hooks its workers carry (a
shard's worker killed while a trigger file exists)."""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
import ray
from ray._private.authentication_test_utils import reset_auth_token_state

from pipeline.distributed.bucket_shard import SCRATCH_PREFIX
from pipeline.distributed.reaper import Processes, descendants
from tests.support.inputs import ROOT

RAY = Path(sys.executable).parent / "ray"
# A Ray installation's files: its sockets' paths must stay short (a Unix socket's path is at
# most 107 bytes), so not under pytest's tmp_path.
SHORT_TMP = "/tmp"
# The processes of a Ray node that are not its workers, though named as Ray names its workers.
AGENTS = {"ray::DashboardAgent", "ray::RuntimeEnvAgent"}

# The `sitecustomize` of every Python process the cluster starts (its folder is first on the
# cluster's PYTHONPATH, which its raylet passes to its workers, of any job): when a shard's task
# starts its site (the `site` folder of its scratch folder), its worker kills itself with
# SIGKILL while $PIPELINE_TEST_KILL_EVERY_SHARD names a file, and once, removing the file, when
# $PIPELINE_TEST_KILL_A_SHARD names one.
HOOKS = """
import os, signal, sys

def _hook(event, args):
    path = str(args[0]) if args else ""
    if event != "os.mkdir" or not path.endswith("/site") or SCRATCH_PREFIX not in path:
        return
    if not os.path.exists(os.environ["PIPELINE_TEST_KILL_EVERY_SHARD"]):
        try:
            os.remove(os.environ["PIPELINE_TEST_KILL_A_SHARD"])
        except OSError:
            return
    os.kill(os.getpid(), signal.SIGKILL)

sys.addaudithook(_hook)
"""


@dataclass
class Cluster:
    """A cluster that `ray start` left running, with token authentication."""

    tmp: Path  # its TMPDIR
    address: str  # its GCS
    token: str
    kill_a_shard: Path  # when this file exists, the first shard's task to see it kills its worker
    kill_every_shard: Path  # while this file exists, every shard's task kills its worker
    process: subprocess.Popen[bytes]  # `ray start`

    def nodes_processes(self) -> Processes:
        """The processes of the cluster but its workers (which come and go)."""
        found = descendants({self.process.pid})
        return {pid: start for pid, start in found.items() if not _worker(pid)}


def _worker(pid: int) -> bool:
    """A worker: named `ray::...` by Ray, or not yet (its command line, `default_worker.py`)."""
    name = process_name(pid)
    if name.startswith("ray::"):
        return name not in AGENTS
    try:
        return b"default_worker.py" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def process_name(pid: int) -> str:
    """A process's command line, as `ps` shows it (Ray's processes rename themselves)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode()
    except OSError:
        return ""


def alive(processes: Processes) -> Processes:
    """Those of `processes` still running (the same start time, not a zombie)."""
    now = descendants(set(processes))
    return {pid: start for pid, start in processes.items() if now.get(pid) == start}


def kill(processes: Processes) -> None:
    for pid in alive(processes):
        os.kill(pid, signal.SIGKILL)


def ray_env(ray_tmp: Path, **extra: str) -> dict[str, str]:
    """The environment of a Ray process whose files are under `ray_tmp` (its TMPDIR)."""
    return {"TMPDIR": str(ray_tmp), "RAY_USAGE_STATS_ENABLED": "0", **extra}


@contextmanager
def local_cluster(cpus: int) -> Iterator[Cluster]:
    """`ray start --head` with token authentication and `cpus` CPUs, its environment this
    process's (the test bucket's AWS_* settings, when set: its raylet passes them to every worker
    it starts, as a real cluster's nodes hold their own settings), no dashboard, no autoscaler
    monitor, no log monitor (no driver here reads its workers' output), no usage statistics;
    its workers import the project and carry `HOOKS`. This process joins it as a driver."""
    with tempfile.TemporaryDirectory(prefix="r", dir=SHORT_TMP) as directory:
        tmp, token = Path(directory), secrets.token_hex(16)
        hooks = tmp / "hooks"
        hooks.mkdir()
        (hooks / "sitecustomize.py").write_text(f"SCRATCH_PREFIX = {SCRATCH_PREFIX!r}\n{HOOKS}")
        triggers = {
            "PIPELINE_TEST_KILL_A_SHARD": str(tmp / "kill-a-shard"),
            "PIPELINE_TEST_KILL_EVERY_SHARD": str(tmp / "kill-every-shard"),
        }
        hooked = {"PYTHONPATH": f"{hooks}{os.pathsep}{ROOT}", **triggers}
        auth = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": token}
        # Idle workers kept (Ray's soft limit is one a CPU): each job's (this process's, and each
        # driver's that joins) would otherwise end another's, to be started again.
        kept = {"RAY_num_workers_soft_limit": "8"}
        env = {**os.environ, **ray_env(tmp, **auth, **hooked, **kept)}
        process, address = _start_head(env, cpus, tmp / "ray" / "ray_current_cluster")
        nodes: Processes = {}
        try:
            nodes = descendants({process.pid})
            cluster = Cluster(tmp, address, token, *map(Path, triggers.values()), process)
            with pytest.MonkeyPatch.context() as driver:
                for name, value in auth.items():
                    driver.setenv(name, value)
                driver.setenv("RAY_USAGE_STATS_ENABLED", "0")
                # Ray read its settings from the environment when it was imported: again
                # (its own tests' way), and again once they are restored.
                reset_auth_token_state()
                ray.init(address=address, log_to_driver=False)
                try:
                    yield cluster
                finally:
                    ray.shutdown()
            reset_auth_token_state()
        finally:
            nodes.update(descendants({process.pid}))
            process.kill()
            process.wait()
            kill(nodes)


def _start_head(
    env: dict[str, str], cpus: int, written: Path
) -> tuple[subprocess.Popen[bytes], str]:
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
                f"--num-cpus={cpus}",
                "--include-dashboard=false",
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
