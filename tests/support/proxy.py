"""A proxy in front of the test S3 server (`s3`, tests/conftest.py) that counts one client's
requests and kills or pauses it at one of them, and publishes forked under it (the `proxy`
fixture is in tests/publish/conftest.py; the checks every bucket test makes are in
tests/support/bucket.py)."""

from __future__ import annotations

import http.client
import multiprocessing
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any

from pipeline.errors import BuildError
from pipeline.publish.collect import collect
from pipeline.publish.objectstore import publish_release
from tests.support.inputs import ROOT

Request = tuple[int, str, str]  # (n, method, path and query)
Rule = Callable[[Request], str | None]  # "kill", "kill-after", "pause" or None


@dataclass
class Victim:
    """One client's requests through the proxy: the rule says, for each, what happens."""

    rule: Rule
    process: BaseProcess | None = None
    answer: Connection | None = None
    ready: threading.Event = field(default_factory=threading.Event)  # `process` is set
    held: threading.Event = field(default_factory=threading.Event)  # a request is paused
    resume: threading.Event = field(default_factory=threading.Event)
    seen: list[Request] = field(default_factory=list)
    fired: str | None = None  # the action taken, once
    scratch: Path | None = None  # its TMPDIR, removed by `finish`: a killed one leaves files

    def kill(self) -> None:
        self.ready.wait()
        assert self.process is not None and self.process.pid is not None
        os.kill(self.process.pid, signal.SIGKILL)


class Proxy(ThreadingHTTPServer):
    """In front of the S3 server, for one client at a time (`victim`): counts its requests and
    applies its rule to each, once: SIGKILL the client before forwarding the request
    ("kill"), after the server answered it but before the client hears ("kill-after"), or hold
    the request until `resume` ("pause")."""

    daemon_threads = True

    def __init__(self, upstream: str) -> None:
        super().__init__(("127.0.0.1", 0), _Forward)
        self.upstream = upstream.removeprefix("http://")
        self.lock = threading.Lock()
        self.victim = Victim(lambda r: None)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Forward(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # An answer's head and body go out in two writes: with Nagle's algorithm the body waits
    # for the client's delayed ACK of the head (40 ms an answer with a body).
    disable_nagle_algorithm = True
    server: Proxy

    def forward(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        victim = self.server.victim
        with self.server.lock:
            request = (len(victim.seen) + 1, self.command, self.path)
            victim.seen.append(request)
            action = victim.rule(request) if victim.fired is None else None
            if action:
                victim.fired = action
        if action == "kill":
            victim.kill()
            self.close_connection = True
            return
        if action == "pause":
            victim.held.set()
            victim.resume.wait()
        answer = relay(self, self.server.upstream, body)
        if action == "kill-after":
            victim.kill()
            self.close_connection = True
            return
        reply(self, *answer)

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = forward

    def log_message(self, format: str, *args: object) -> None:  # quiet
        pass


Answer = tuple[int, list[tuple[str, str]], bytes]  # status, headers, body


def relay(handler: BaseHTTPRequestHandler, upstream: str, body: bytes) -> Answer:
    """The handler's request sent on to `upstream` (host:port), and its answer."""
    connection = http.client.HTTPConnection(upstream, timeout=60)
    try:
        connection.request(handler.command, handler.path, body, dict(handler.headers))
        answer = connection.getresponse()
        return answer.status, answer.getheaders(), answer.read()
    finally:
        connection.close()


def reply(
    handler: BaseHTTPRequestHandler, status: int, headers: list[tuple[str, str]], data: bytes
) -> None:
    """An answer relayed back as it came, its length set for this connection."""
    handler.send_response(status)
    for name, value in headers:
        if name.lower() not in ("connection", "content-length", "transfer-encoding"):
            handler.send_header(name, value)
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


# Publishers and builds are forked from a server that imported the pipeline once: a child
# starts in milliseconds (a fresh interpreter takes seconds on a busy machine), and each is a
# process of its own, killed with SIGKILL. The server starts no work before it forks (its
# imports leave only idle threads: jemalloc's background threads, polars' clean-up thread);
# obstore's and DuckDB's runtimes start in each child. The server also
# imports pytest, which each child otherwise imports again before its work (80 ms, most of a
# publish's time) when it runs the main script, pytest's, again (as multiprocessing does; not
# in pytest-xdist's workers, which have none), and pyarrow.compute, which each build imports
# late (35 ms a build).
FORKS = multiprocessing.get_context("forkserver")
FORKS.set_forkserver_preload(
    [
        "pytest",
        "pipeline.cli",
        "pipeline.publish.objectstore",
        "tests.support.proxy",
        "pyarrow.compute",
    ]
)


def _publish_child(
    release: Path, url: str, env: dict[str, str], options: dict[str, Any], answer: Connection
) -> None:
    """A publish in a forked child, with the object-store settings of the test that started it
    (the fork server may have started before them), and its own TMPDIR."""
    os.environ.update(env)
    tempfile.tempdir = None  # read TMPDIR again
    try:
        if options.pop("collect_only", False):  # `pipeline publish --collect-only`
            collect(url, keep=options["keep"], grace=options["grace"], jobs=1)
        else:
            publish_release(release, url, jobs=1, **options)
        answer.send((0, ""))
    except BuildError as exc:
        answer.send((1, str(exc)))
    answer.close()
    os._exit(0)  # see `pipeline.cli.boundary.object_store_failures`


# The filesystem events (Python audit events) `run_build` counts in a build's publish step.
FS_EVENTS = frozenset(
    {
        "open",
        "os.rename",
        "os.remove",
        "os.rmdir",
        "os.symlink",
        "os.link",
        "os.mkdir",
        "shutil.rmtree",
        "os.utime",
    }
)


# The steps of a build `run_build` counts the filesystem events of by default: its publish.
PUBLISH_STEP = ("publish",)


def _build_child(
    args: list[str],
    env: dict[str, str],
    kill_at: int,
    err: Path,
    steps: tuple[str, ...],
    fail: bool,
    out: Path | None = None,
) -> None:
    """`pipeline ARGS` as a forked child's program, its standard error into `err` (and its
    standard output into `out`, or nowhere); with
    `kill_at` > 0, SIGKILLed by itself at the `kill_at`-th filesystem event of its `steps`
    (names in `pipeline.conductor`, dotted: `publish`, `nights.tidy`), or, with `fail`, that
    event failing with an OSError instead."""
    os.dup2(os.open(err, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), 2)
    os.dup2(os.open(out or os.devnull, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), 1)
    os.environ.update(env)
    tempfile.tempdir = None  # read TMPDIR again: the caller's, removed when it ends
    os.chdir(ROOT)
    import pipeline.cli
    import pipeline.conductor

    count, armed = 0, False

    def hook(event: str, _: tuple[object, ...]) -> None:
        nonlocal count
        if armed and event in FS_EVENTS:
            count += 1
            if count == kill_at:
                if fail:
                    raise OSError(f"a failure injected at {event}")
                os.kill(os.getpid(), signal.SIGKILL)

    def arm(owner: Any, name: str) -> None:
        step = getattr(owner, name)

        def armed_step(*args: Any, **kwargs: Any) -> Any:
            nonlocal armed
            armed = kill_at > 0
            try:
                return step(*args, **kwargs)
            finally:
                armed = False

        setattr(owner, name, armed_step)

    for dotted in steps:
        *path, name = dotted.split(".")
        owner: Any = pipeline.conductor
        for part in path:
            owner = getattr(owner, part)
        arm(owner, name)
    sys.addaudithook(hook)
    sys.argv = ["pipeline", *args]
    pipeline.cli.run()


def run_build(
    args: list[str],
    env: dict[str, str],
    kill_at: int = 0,
    steps: tuple[str, ...] = PUBLISH_STEP,
    fail: bool = False,
) -> tuple[int, str]:
    """`pipeline ARGS` in a child process forked from the server that imported the pipeline
    (see FORKS), killed at the `kill_at`-th filesystem event of its `steps` (its publish
    step; 0: never), or with `fail`, that event failing: its exit code (-9 killed) and
    standard error."""
    with tempfile.TemporaryDirectory() as tmp:
        err = Path(tmp) / "stderr"
        child_env = {**env, "TMPDIR": tmp}  # what a kill leaves behind goes with `tmp`
        process = FORKS.Process(
            target=_build_child, args=(args, child_env, kill_at, err, steps, fail)
        )
        process.start()
        process.join(300)
        assert process.exitcode is not None, "the build did not end in 300 s"
        return process.exitcode, err.read_text()


def fork_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`pipeline ARGS` as `run_cli` runs it (tests/support/runs.py), this process's
    environment included (with `env` added), in a child forked from the server that imported the pipeline (see
    FORKS): the same program and the same exit, without a fresh interpreter's start. What
    needs a process of its own from the start (the interpreter's shutdown, standard output
    closed) keeps `run_cli`."""
    with tempfile.TemporaryDirectory() as tmp:
        err, out = Path(tmp) / "stderr", Path(tmp) / "stdout"
        process = FORKS.Process(
            target=_build_child,
            args=(list(args), {**os.environ, **(env or {})}, 0, err, PUBLISH_STEP, False, out),
        )
        process.start()
        process.join(300)
        assert process.exitcode is not None, "the command did not end in 300 s"
        return subprocess.CompletedProcess(
            ["pipeline", *args], process.exitcode, out.read_text(), err.read_text()
        )


def start_build(args: list[str], err: Path) -> BaseProcess:
    """`pipeline ARGS` started in a child process forked from the server that imported the
    pipeline (see FORKS), its standard error into `err`; the caller ends it."""
    process = FORKS.Process(target=_build_child, args=(args, {}, 0, err, PUBLISH_STEP, False))
    process.start()
    return process


def _aws_env(endpoint: str) -> dict[str, str]:
    """This process's AWS_* settings, the endpoint `endpoint` (the proxy's)."""
    aws = {k: v for k, v in os.environ.items() if k.startswith("AWS_")}
    return {**aws, "AWS_ENDPOINT_URL": endpoint}


def start_publish(proxy: Proxy, release: Path, url: str, rule: Rule, **options: Any) -> Victim:
    """A publish of `release` in a child process, its requests through `proxy` under `rule`
    (with `collect_only`, a collection of the bucket instead)."""
    victim = Victim(rule, scratch=Path(tempfile.mkdtemp(prefix="publish-")))
    proxy.victim = victim
    mine, theirs = FORKS.Pipe(duplex=False)
    env = {**_aws_env(proxy.endpoint), "TMPDIR": str(victim.scratch)}
    process = FORKS.Process(target=_publish_child, args=(release, url, env, options, theirs))
    process.start()
    theirs.close()
    victim.process, victim.answer = process, mine
    victim.ready.set()
    return victim


def paused(victim: Victim) -> bool:
    """Whether it is held at its paused request (False: it ended without reaching one)."""
    assert victim.process is not None
    while victim.process.is_alive():
        if victim.held.wait(0.1):
            return True
    return victim.held.is_set()


def finish(victim: Victim) -> tuple[int, str]:
    """How it ended: 0, 1 with its one-line failure, or -9 (killed)."""
    assert victim.process is not None and victim.answer is not None
    try:
        code, err = victim.answer.recv()
    except EOFError:  # killed
        code, err = None, ""
    victim.process.join(120)
    if victim.scratch is not None:
        shutil.rmtree(victim.scratch, ignore_errors=True)
    if code is None:
        code = victim.process.exitcode
    assert code in (0, 1, -signal.SIGKILL), (code, err)
    if code == 1:
        assert "\n" not in err, err
    return code, err
