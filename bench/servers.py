"""The processes `bench.live` measures: `pipeline serve` on a build, nginx in front of it (the
generated configuration), a client over nginx's unix-domain socket, and what /proc says of a
process's memory and CPU; and the client's requests, timed."""

from __future__ import annotations

import getpass
import http.client
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import duckdb

from pipeline.export import nginx
from pipeline.paths import CURRENT, SITE, WAREHOUSE

LISTENING = re.compile(r"serving .+ on http://127\.0\.0\.1:(?P<port>[0-9]+)/")


class UnixHTTPConnection(http.client.HTTPConnection):
    """HTTP over a unix-domain socket (nginx's listener in this benchmark)."""

    def __init__(self, path: Path, timeout: float) -> None:
        super().__init__("localhost", timeout=timeout)
        self.path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        sock.connect(str(self.path))
        self.sock = sock


def rss_mb(pid: int) -> tuple[float, float]:
    """(resident, peak resident) MiB of a process, from /proc."""
    lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    fields = dict(line.split(":", 1) for line in lines if ":" in line)

    def mib(name: str) -> float:
        return round(int(fields[name].split()[0]) / 1024, 1)

    return mib("VmRSS"), mib("VmHWM")


@contextmanager
def serving(output: Path, env: dict[str, str] | None = None) -> Iterator[tuple[int, int]]:
    """`pipeline serve` on the build (with `env` added to its environment): (its port, its
    process id)."""
    command = [sys.executable, "-m", "pipeline", "serve", "--output", str(output), "--port", "0"]
    environment = {**os.environ, **(env or {})}
    server = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env=environment)
    try:
        assert server.stderr is not None
        port = None
        for line in server.stderr:
            found = LISTENING.search(line)
            if found:
                port = int(found["port"])
                break
        if port is None:
            raise RuntimeError(f"pipeline serve exited ({server.wait()})")
        threading.Thread(target=server.stderr.read, daemon=True).start()  # never a full pipe
        yield port, server.pid
    finally:
        server.terminate()
        server.wait(10)


@contextmanager
def nginx_in_front(output: Path, port: int) -> Iterator[Path]:
    """nginx on the generated configuration, `pipeline serve` at `port` its upstream, its live
    answers' cache in its folder: the unix-domain socket it listens on (its process id is in
    `nginx.pid` beside it)."""
    binary = shutil.which("nginx", path=f"{os.environ.get('PATH', '')}:/usr/sbin:/sbin")
    if binary is None:
        raise RuntimeError("nginx is not installed: run `make system-deps`")
    work = Path(tempfile.mkdtemp(prefix="bench-nginx-"))
    sock = work / "nginx.sock"
    site = (output / CURRENT / SITE).resolve()
    conf = nginx.render(site, f"unix:{sock}", f"127.0.0.1:{port}", cache=work / "cache")
    (work / "site.conf").write_text(conf)
    temp = " ".join(
        f"{name}_temp_path {work / name};"
        for name in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    (work / "nginx.conf").write_text(
        f"daemon off;\nmaster_process off;\nuser {getpass.getuser()};\npid {work / 'nginx.pid'};\n"
        f"error_log {work / 'error.log'} warn;\nevents {{ worker_connections 1024; }}\n"
        f"http {{ access_log off; {temp} include {work / 'site.conf'}; }}\n"
    )
    process = subprocess.Popen(
        [binary, "-p", str(work), "-c", str(work / "nginx.conf"), "-e", str(work / "error.log")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while not sock.exists():
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"nginx did not start: {(work / 'error.log').read_text()}")
            time.sleep(0.05)
        yield sock
    finally:
        process.terminate()
        process.wait(10)
        shutil.rmtree(work, ignore_errors=True)


def cpu_seconds(pid: int) -> float:
    """User and system CPU seconds of a process so far, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# The client: keep-alive connections, one request after the other or several clients at once.
Connect = Callable[[], http.client.HTTPConnection]


# A request: a GET of a target, or a POST of a target with its body (a search's).
Request = str | tuple[str, bytes]


def _get(
    conn: http.client.HTTPConnection, request: Request, headers: dict[str, str] | None = None
) -> None:
    if isinstance(request, tuple):
        target, body = request
        conn.request("POST", target, body=body, headers=headers or {})
    else:
        target = request
        conn.request("GET", target, headers=headers or {})
    response = conn.getresponse()
    response.read()
    if response.status != 200:
        raise RuntimeError(f"{target}: HTTP {response.status}")


def latencies(connect: Connect, targets: Sequence[Request], count: int) -> list[float]:
    """Seconds of `count` requests one after the other on one keep-alive connection, the
    targets in turn, after one to warm up (the warehouse opens, the thread's cursor is made)."""
    conn = connect()
    try:
        _get(conn, targets[0])
        times = []
        for index in range(count):
            started = time.perf_counter()
            _get(conn, targets[(index + 1) % len(targets)])
            times.append(time.perf_counter() - started)
        return times
    finally:
        conn.close()


def first_request(connect: Connect, warm: str, target: str) -> float:
    """Milliseconds of one request, on a connection that has just had the answer to `warm`."""
    conn = connect()
    try:
        _get(conn, warm)
        started = time.perf_counter()
        _get(conn, target)
        return round((time.perf_counter() - started) * 1000, 2)
    finally:
        conn.close()


def throughput(connect: Connect, targets: list[str], clients: int, seconds: float) -> float:
    """Requests per second of `clients` threads (`requests_for`)."""
    done, elapsed = requests_for(connect, targets, clients, seconds)
    return done / elapsed


def requests_for(
    connect: Connect,
    targets: list[str],
    clients: int,
    seconds: float,
    headers: dict[str, str] | None = None,
) -> tuple[int, float]:
    """(requests, seconds they took) of `clients` threads, each on its own keep-alive
    connection, each asking until `seconds` have passed, and at least once (a thread may start
    late), with `headers`."""
    done = [0] * clients
    stop = time.perf_counter() + seconds

    def client(index: int) -> None:
        conn = connect()
        try:
            while not done[index] or time.perf_counter() < stop:
                _get(conn, targets[(done[index] + index) % len(targets)], headers)
                done[index] += 1
        finally:
            conn.close()

    started = time.perf_counter()
    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sum(done), time.perf_counter() - started


def percentiles(times: list[float]) -> tuple[float, float]:
    ordered = sorted(times)
    p50 = statistics.median(ordered) * 1000
    p95 = ordered[max(0, int(len(ordered) * 0.95) - 1)] * 1000
    return round(p50, 2), round(p95, 2)


@contextmanager
def warehouse(output: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    """The published build's warehouse, read-only."""
    con = duckdb.connect(str(output / CURRENT / WAREHOUSE), read_only=True)
    try:
        yield con
    finally:
        con.close()
