"""The Ray cluster a night runs on: which one, how it is joined, and what a lost task means to
the night (docs/cluster.md, "Which cluster a night joins" and "Retries")."""

from __future__ import annotations

import importlib
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
AUTH_MODE = "RAY_AUTH_MODE"
LOCAL = "local"  # `ray.init`'s address of a new local cluster


def _address(config: RaySettings) -> str:
    """The cluster the night joins: `ray.address`, else `RAY_ADDRESS`, else a local one."""
    return config.address or os.environ.get("RAY_ADDRESS") or LOCAL


def check_cluster(config: RaySettings) -> None:
    """Refuse, before any cluster is started or joined, a named cluster with the build's token
    mode unsaid: RAY_AUTH_MODE unset (and, for `auto`, no token of this machine's, which Ray
    then takes) would try for 20 s and fail on a cluster with token authentication."""
    try:
        import ray

        raylet = importlib.import_module("ray._raylet")  # its token loader has no stub
    except ImportError:
        return  # `connected` says so
    address = _address(config)
    if ray.is_initialized() or address == LOCAL or os.environ.get(AUTH_MODE):
        return
    loader = raylet.AuthenticationTokenLoader.instance()
    if address == "auto" and loader.has_token(ignore_auth_mode=True):
        return
    raise BuildError(
        f"engine ray: the cluster at {address} was not joined: {AUTH_MODE} is not set. A "
        f"cluster with token authentication needs {AUTH_HINT}; one without it, "
        f"{AUTH_MODE}=disabled"
    )


@contextmanager
def connected(config: RaySettings) -> Iterator[Any]:
    """Ray, connected to the night's cluster; a lost task within is a `BuildError`."""
    try:
        import ray
    except ImportError:
        raise BuildError("engine ray: Ray is not installed (pip install -e '.[ray]')") from None
    if ray.is_initialized():
        with _lost_tasks_fail(ray, config):
            yield ray
        return
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    address = _address(config)
    with reaped() if address == LOCAL else nullcontext(_no_cleanup) as started:
        try:
            ray.init(address=address, include_dashboard=False, log_to_driver=False)
        except (ConnectionError, ray.exceptions.AuthenticationError) as exc:
            if address == LOCAL:
                raise
            if _token_refused(exc):
                raise BuildError(
                    f"engine ray: the cluster at {address} refused the build's token: "
                    f"{_first_line(exc)} (a cluster that runs with token authentication needs "
                    f"{AUTH_HINT}, the same token as the cluster's)"
                ) from exc
            raise BuildError(
                f"engine ray: cannot connect to the cluster at {address}: {_first_line(exc)} "
                "(is Ray running there, and is that its GCS address, HEAD:6379, or auto on the "
                "head node?)"
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


# What Ray's errors say when the cluster refused the driver's token (the GCS client's status).
TOKEN_REFUSED = ("InvalidAuthToken", "UNAUTHENTICATED", "authentication token")


def _token_refused(exc: BaseException) -> bool:
    """Whether Ray's failure to join, or one that caused it, is a refused (or missing) token
    rather than a cluster that could not be reached."""
    seen: BaseException | None = exc
    while seen is not None:
        text = str(seen).lower()
        if type(seen).__name__ == "AuthenticationError" or any(
            word.lower() in text for word in TOKEN_REFUSED
        ):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0]


def _no_cleanup() -> None:
    pass
