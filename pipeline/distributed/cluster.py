"""The Ray cluster of a distributed build: which one it runs on, how it joins it, and what the
engine's failures mean to the build.

- Already connected (a test, a notebook): that cluster.
- `ray.address` (`--address`), or `RAY_ADDRESS` as Ray's jobs set it: that cluster (`auto`,
  `host:port` of its GCS, `ray://host:port` of its Ray Client server). A cluster that cannot be
  joined is a handled failure, whose line says what token authentication needs.
- Else a local cluster of this machine's cores, the build's own (`address="local"`: never one
  that `ray start` left running here, which `ray.init()` would join), shut down after the
  build, and reaped with its driver however the driver ends (`reaper`).

A task that could not be run to its end in its retries (its worker, node or result lost) is a
handled failure of the build (exit 1, one line), not a crash; a task that stopped on a handled
failure (a bad input file) is that failure, its own line, not Ray's wrapper of it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from typing import Any

from pipeline.distributed.reaper import reaped
from pipeline.errors import BuildError
from pipeline.settings import RaySettings

# What Ray raises when a task could not be run to its end and its retries are spent.
LOST_TASK = (
    "WorkerCrashedError",
    "LocalRayletDiedError",
    "NodeDiedError",
    "OutOfMemoryError",
    "ObjectLostError",
    "TaskUnschedulableError",
)
# What a driver needs to join a cluster that runs with token authentication: Ray 2.60's `ray
# start` turns it on where it finds a token (~/.ray/auth_token, which any local `ray.init()`
# writes), and a driver given an address does not turn it on by itself.
AUTH_HINT = (
    "RAY_AUTH_MODE=token in the build's environment, and the cluster's token in "
    "~/.ray/auth_token, RAY_AUTH_TOKEN_PATH or RAY_AUTH_TOKEN"
)


@contextmanager
def connected(config: RaySettings) -> Iterator[Any]:
    """Ray, connected to the build's cluster (see the module's docstring); a lost task within
    is a `BuildError`."""
    try:
        import ray
    except ImportError:
        raise BuildError("engine ray: Ray is not installed (pip install -e '.[ray]')") from None
    if ray.is_initialized():
        with _lost_tasks_fail(ray, config):
            yield ray
        return
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    address = config.address or os.environ.get("RAY_ADDRESS") or "local"
    with reaped() if address == "local" else nullcontext(_nothing) as started:
        try:
            ray.init(address=address, include_dashboard=False, log_to_driver=False)
        except (ConnectionError, ray.exceptions.AuthenticationError) as exc:
            if address == "local":
                raise
            raise BuildError(
                f"engine ray: cannot connect to the cluster at {address}: {_first_line(exc)} "
                f"(a cluster that runs with token authentication needs {AUTH_HINT})"
            ) from exc
        started()  # the reaper's to kill, if this process dies
        try:
            with _lost_tasks_fail(ray, config):
                yield ray
        finally:
            ray.shutdown()


@contextmanager
def _lost_tasks_fail(ray: Any, config: RaySettings) -> Iterator[None]:
    try:
        yield
    except tuple(getattr(ray.exceptions, name) for name in LOST_TASK) as exc:
        raise BuildError(
            f"a task of the build could not be run ({type(exc).__name__}, after ray.retries = "
            f"{config.retries}): {_first_line(exc)} Nothing was published."
        ) from exc
    except ray.exceptions.RayTaskError as exc:
        if isinstance(exc.cause, BuildError):
            raise exc.cause from None
        raise


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0]


def _nothing() -> None:
    pass
