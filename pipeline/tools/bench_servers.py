"""The processes `bench_live` measures: `pipeline serve` on a build, nginx in front of it (the
generated configuration), a client over nginx's unix-domain socket, and what /proc says of a
process's memory and CPU."""

from __future__ import annotations

import getpass
import http.client
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pipeline.export import nginx
from pipeline.paths import CURRENT, SITE

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
    """nginx on the generated configuration, `pipeline serve` at `port` its upstream: the
    unix-domain socket it listens on."""
    binary = shutil.which("nginx", path=f"{os.environ.get('PATH', '')}:/usr/sbin:/sbin")
    if binary is None:
        raise RuntimeError("nginx is not installed: run `make system-deps`")
    work = Path(tempfile.mkdtemp(prefix="bench-nginx-"))
    sock = work / "nginx.sock"
    site = (output / CURRENT / SITE).resolve()
    (work / "site.conf").write_text(nginx.render(site, f"unix:{sock}", f"127.0.0.1:{port}"))
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
