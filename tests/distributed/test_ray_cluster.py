"""`pipeline build --engine ray` and the local cluster it starts for itself, from the command
line: a cluster of its own even when `ray start` left one running on the machine; no process
of it left behind when the driver is killed; a task that cannot be run in its retries is a
handled failure (exit 1, one line)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pipeline.distributed.reaper import Processes, under
from tests.conftest import ROOT, SAMPLE, run_cli

RAY = Path(sys.executable).parent / "ray"
# A Ray installation's files: its sockets' paths must stay short (a Unix socket's path is at
# most 107 bytes), so not under pytest's tmp_path.
SHORT_TMP = "/tmp"


def _alive(processes: Processes) -> Processes:
    """Those of `processes` still running (the same start time, not a zombie)."""
    now = under(set(processes))
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


@pytest.mark.slow
def test_with_no_address_the_build_starts_a_cluster_of_its_own(
    ray_tmp: Path, tmp_path: Path
) -> None:
    """`ray start` left a cluster running on the machine (Ray's `ray.init()` would join it): the
    build starts a local cluster of its own, and leaves the other one alone."""
    head = subprocess.Popen(
        [
            str(RAY),
            "start",
            "--head",
            "--block",
            "--port=0",
            "--num-cpus=1",
            "--include-dashboard=false",
            "--disable-usage-stats",
        ],
        env={**os.environ, **_env(ray_tmp)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    cluster: Processes = {}
    try:
        address = ray_tmp / "ray" / "ray_current_cluster"  # what `ray.init()` reads
        deadline = time.monotonic() + 120
        while not address.exists() and head.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert address.exists(), "ray start did not come up"
        cluster = under({head.pid})
        sessions = set((ray_tmp / "ray").glob("session_2*"))
        assert len(sessions) == 1

        done = run_cli(
            "build", "--engine", "ray", "--input", str(SAMPLE), "--output", str(tmp_path / "out"),
            env=_env(ray_tmp),
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        own = set((ray_tmp / "ray").glob("session_2*")) - sessions
        assert len(own) == 1  # a session of its own, not the running cluster's
        assert head.poll() is None and set(_alive(cluster)) == set(cluster)  # left alone
    finally:
        cluster.update(under({head.pid}))
        head.kill()
        head.wait()
        _kill(cluster)


@pytest.mark.slow
def test_a_killed_driver_leaves_no_process_of_its_cluster(ray_tmp: Path, tmp_path: Path) -> None:
    """SIGKILL the driver in the middle of its shards: within seconds, no process of its local
    cluster is left (Ray alone leaves its agents for a minute)."""
    driver = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pipeline",
            "build",
            "--engine",
            "ray",
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
        cluster = under({driver.pid})
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


# Put on the PYTHONPATH of the build, and so of its Ray workers (they inherit the driver's
# environment): in a process where the trigger file exists, a shard's task kills its own worker
# as it starts its site.
KILL_EVERY_SHARD = """
import os, signal, sys

def _hook(event, args):
    if event == "os.mkdir" and str(args[0]).endswith("/site") and "/shards/" in str(args[0]):
        if os.path.exists(os.environ.get("PIPELINE_TEST_KILL_EVERY_SHARD", "")):
            os.kill(os.getpid(), signal.SIGKILL)

sys.addaudithook(_hook)
"""


@pytest.mark.slow
def test_a_task_out_of_retries_is_a_handled_failure(ray_tmp: Path, tmp_path: Path) -> None:
    """Every attempt of a shard's task dies with its worker: the build fails with one line and
    exit 1 (not a crash), and publishes nothing."""
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(KILL_EVERY_SHARD)
    trigger = tmp_path / "kill"
    trigger.touch()
    output = tmp_path / "out"
    failed = run_cli(
        "build", "--engine", "ray", "--shards", "1", "--input", str(SAMPLE), "--output", str(output),
        env=_env(
            ray_tmp,
            PYTHONPATH=f"{hooks}{os.pathsep}{ROOT}",
            PIPELINE_TEST_KILL_EVERY_SHARD=str(trigger),
            PIPELINE_RAY__RETRIES="1",
        ),
    )  # fmt: skip
    assert failed.returncode == 1, failed.stderr
    last = failed.stderr.strip().splitlines()[-1]
    assert last.startswith(
        "build failed: a task of the build could not be run (WorkerCrashedError, after "
        "ray.retries = 1): "
    ), last
    assert last.endswith("Nothing was published."), last
    assert not (output / "current").exists()
