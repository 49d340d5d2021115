"""A local Ray cluster of its own for the Ray tests, and the hook that kills one shard's worker
when a trigger file exists (the tests' killed worker)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import ray

from tests.support.inputs import ROOT

TRIGGER = "PIPELINE_TEST_KILL_TRIGGER"


def kill_a_shard_once() -> None:
    """In every Ray worker: when the file named by $PIPELINE_TEST_KILL_TRIGGER exists, the first
    shard task to reach its site (its stores' steps done, its pages not yet written: the
    `site` folder of its scratch folder) removes the file and kills its own worker with SIGKILL."""
    import os
    import signal
    import sys

    from pipeline.distributed.bucket_shard import SCRATCH_PREFIX

    trigger = os.environ.get(TRIGGER)

    def hook(event: str, args: tuple[Any, ...]) -> None:
        path = str(args[0]) if args else ""
        in_shard = SCRATCH_PREFIX in path
        if event == "os.mkdir" and path.endswith("/site") and in_shard:
            try:
                os.remove(trigger or "")
            except OSError:
                return
            os.kill(os.getpid(), signal.SIGKILL)

    if trigger:
        sys.addaudithook(hook)


@contextmanager
def local_cluster(trigger: Path | None = None) -> Iterator[None]:
    """A local Ray cluster of its own (never one that `ray start` left running on the machine),
    of two CPUs, no dashboard, no usage statistics. Its workers import the tests from the
    project's root and get the test bucket's AWS_* settings, if set when it starts (its raylet
    passes its environment to every worker it starts, of any job; the job of this process sets
    them in its `runtime_env` too); with `trigger`, the hook above, in this job's workers."""
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    env = {k: v for k, v in os.environ.items() if k.startswith("AWS_")}
    env["PYTHONPATH"] = str(ROOT)
    runtime_env: dict[str, Any] = {"env_vars": env}
    if trigger is not None:
        env[TRIGGER] = str(trigger)
        runtime_env["worker_process_setup_hook"] = kill_a_shard_once
    ray.init(
        address="local",
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        runtime_env=runtime_env,
    )
    try:
        yield
    finally:
        ray.shutdown()
