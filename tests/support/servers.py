"""The servers under test, over real sockets: `pipeline serve` as a subprocess (it reports the
port it took) and nginx (Debian's package, installed by `make system-deps`) on the generated
configuration, listening on a unix-domain socket, with the preview server as its upstream;
one request to either, and the same to both."""

from __future__ import annotations

import getpass
import http.client
import os
import queue
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipeline.api.urls import HELP_PATH
from pipeline.export import nginx

if TYPE_CHECKING:
    from pipeline.settings import ServeSettings

NGINX = shutil.which("nginx") or shutil.which("nginx", path="/usr/sbin:/usr/local/sbin")
# Only a safety net: every wait below ends on an event (a line, a socket answering, an exit).
STARTUP_TIMEOUT = 60.0

# A server's address: the preview server's TCP port on 127.0.0.1 (it reports the port it took),
# or nginx's unix-domain socket (nginx cannot report a port, so it gets a path of its own).
Address = int | Path


@dataclass(frozen=True)
class Reply:
    status: int
    body: bytes
    content_type: str
    headers: dict[str, str]


class UnixHTTPConnection(http.client.HTTPConnection):
    """HTTP over a unix-domain socket (sent with `Host: localhost`)."""

    def __init__(self, socket_path: Path, timeout: float) -> None:
        super().__init__("localhost", timeout=timeout)
        self.socket_path = socket_path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        try:
            sock.connect(str(self.socket_path))
        except OSError:
            sock.close()
            raise
        self.sock = sock


def connection(address: Address, timeout: float = 30) -> http.client.HTTPConnection:
    return (
        UnixHTTPConnection(address, timeout=timeout)
        if isinstance(address, Path)
        else http.client.HTTPConnection("127.0.0.1", address, timeout=timeout)
    )


def _exchange(
    conn: http.client.HTTPConnection,
    target: str,
    method: str,
    headers: dict[str, str] | None,
    body: bytes | None = None,
) -> Reply:
    """One request on `conn`, its answer read whole. `headers` are sent as given, with a
    Content-Length for a `body` where they have none."""
    conn.putrequest(method, target, skip_accept_encoding=True)
    for name, value in (headers or {}).items():
        conn.putheader(name, value)
    if body is not None and "content-length" not in {n.lower() for n in headers or {}}:
        conn.putheader("Content-Length", str(len(body)))
    conn.endheaders(body)
    response = conn.getresponse()
    answer = response.read()
    got: dict[str, str] = {}
    for name, value in response.getheaders():  # a repeated header as one, its values listed
        got[name.lower()] = f"{got[name.lower()]}, {value}" if name.lower() in got else value
    return Reply(response.status, answer, got.get("content-type", ""), got)


def request(
    address: Address,
    target: str,
    method: str = "GET",
    headers: dict[str, str] | None = None,
    body: bytes | None = None,
) -> Reply:
    """One request on a connection of its own. `headers` are sent as given (a Content-Length
    with no `body`: the answer is read before any body is sent)."""
    conn = connection(address)
    try:
        return _exchange(conn, target, method, headers, body)
    finally:
        conn.close()


class Client:
    """Requests (a search's with its body) on one connection to each address, kept open between
    them as a client library keeps it (a loop of requests then costs no connect and accept
    each); for one thread. A connection the server closed (as its answer said, or while idle) is opened again;
    a request that is itself about the connection goes on one of its own (`request`)."""

    def __init__(self) -> None:
        self._kept: dict[Address, http.client.HTTPConnection] = {}

    def request(
        self,
        address: Address,
        target: str,
        method: str = "GET",
        headers: dict[str, str] | None = None,
        body: bytes | None = None,
    ) -> Reply:
        conn = self._kept.pop(address, None)
        if conn is not None and conn.sock is not None:
            try:
                reply = _exchange(conn, target, method, headers, body)
            except ConnectionError:  # closed by the server while idle: once more, on a new one
                conn.close()
            except BaseException:  # never kept half-read
                conn.close()
                raise
            else:
                self._kept[address] = conn
                return reply
        conn = connection(address)
        try:
            reply = _exchange(conn, target, method, headers, body)
        except BaseException:
            conn.close()
            raise
        self._kept[address] = conn
        return reply

    def close(self) -> None:
        for conn in self._kept.values():
            conn.close()
        self._kept.clear()


def both(
    nginx_socket: Path, serve_port: int, target: str, client: Client | None = None, **kw: Any
) -> tuple[Reply, Reply]:
    """The same request to nginx and to the preview server (on `client`'s kept connections,
    if given): the same status, type and bytes."""
    send = client.request if client is not None else request
    a, b = send(nginx_socket, target, **kw), send(serve_port, target, **kw)
    assert (a.status, a.content_type, a.body) == (b.status, b.content_type, b.body), target
    return a, b


def envelope(message: str) -> dict[str, Any]:
    """The error envelope of one message, parsed."""
    return {"success": False, "errors": [message], "results": []}


def wait_until_up(address: Address, process: subprocess.Popen[bytes], log: Path) -> None:
    """Until a request to `address` gets an answer (nginx creates its socket, then listens), or
    the process exits."""
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited ({process.returncode}): {log.read_text()}")
        try:
            request(address, HELP_PATH)
            return
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(f"nothing answers on {address}")


LISTENING = re.compile(
    rf"serving (?P<output>.+) on http://127\.0\.0\.1:(?P<port>[0-9]+){re.escape(HELP_PATH)}"
)


@contextmanager
def preview_server(output: Path, env: dict[str, str] | None = None) -> Iterator[int]:
    """`pipeline serve --port 0` on `output` (settings from `env`, `PIPELINE_SERVE__...`): the
    port it took, read from the line it prints on stderr once it listens. Every test that starts
    the preview server starts it here."""
    process = subprocess.Popen(
        [sys.executable, "-m", "pipeline", "serve", "--output", str(output), "--port", "0"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    )
    ports: queue.Queue[int | None] = queue.Queue()
    lines: list[str] = []

    def drain() -> None:
        """Read stderr to its end, so that the server never blocks on a full pipe."""
        assert process.stderr is not None
        for line in process.stderr:
            lines.append(line)
            found = LISTENING.fullmatch(line.rstrip("\n"))
            if found and found["output"] == str(output):
                ports.put(int(found["port"]))
        ports.put(None)  # the server exited

    threading.Thread(target=drain, daemon=True).start()
    try:
        try:
            port = ports.get(timeout=STARTUP_TIMEOUT)
        except queue.Empty:
            raise TimeoutError(f"pipeline serve printed no listening line: {lines}") from None
        if port is None:
            raise RuntimeError(f"pipeline serve exited ({process.wait()}): {''.join(lines)}")
        # The line comes once the socket listens: the first request needs no retry.
        assert request(port, HELP_PATH).status == 200
        yield port
    finally:
        process.terminate()
        process.wait(10)


def nginx_main_conf(workdir: Path, site_conf: Path, more: str = "") -> Path:
    """nginx's own configuration around `site_conf` (with `more` in `http { }`): in the
    foreground, as this user, its pid, logs and temporary files in `workdir`. Its path."""
    assert NGINX, "nginx is not installed: run `make system-deps` (or `make test`)"
    temp = " ".join(
        f"{name}_temp_path {workdir / name};"
        for name in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    main = workdir / "main.conf"
    main.write_text(
        # As root, nginx would read the site as `nobody`; the test's files are private.
        f"daemon off;\nmaster_process off;\nuser {getpass.getuser()};\npid {workdir / 'nginx.pid'};\n"
        f"error_log {workdir / 'error.log'} warn;\nevents {{ worker_connections 512; }}\n"
        f"http {{ access_log off; {temp} include {site_conf}; {more} }}\n"
    )
    return main


@contextmanager
def nginx_on(workdir: Path, site_conf: Path, sock: Path, more: str = "") -> Iterator[Path]:
    """nginx on `site_conf` (its main configuration written by `nginx_main_conf`), once a
    request to `sock`, where the site configuration listens, is answered."""
    assert NGINX, "nginx is not installed: run `make system-deps` (or `make test`)"
    main = nginx_main_conf(workdir, site_conf, more)
    log = workdir / "error.log"
    with log.open("ab") as stderr:
        process = subprocess.Popen(
            [NGINX, "-p", str(workdir), "-c", str(main), "-e", str(log)],
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            env={**os.environ, "TZ": "UTC"},  # `expires @HH:MM` counts in nginx's time zone
        )
    try:
        wait_until_up(sock, process, log)
        yield sock
    finally:
        process.terminate()
        process.wait(10)


@contextmanager
def running_nginx(
    workdir: Path, site: Path, upstream: str, limits: ServeSettings | None = None
) -> Iterator[Path]:
    """nginx on the generated configuration (with the `serve` settings `limits`), listening on a
    unix-domain socket in `workdir`, keeping the live answers in `workdir/cache`."""
    workdir.mkdir(parents=True, exist_ok=True)
    sock = workdir / "nginx.sock"
    assert len(str(sock)) < 100, f"{sock}: too long for a unix-domain socket (set a short TMPDIR)"
    limited = {"limits": limits} if limits is not None else {}  # the default: nginx.render's
    conf = nginx.render(site, f"unix:{sock}", upstream, **limited, cache=workdir / "cache")
    (workdir / "site.conf").write_text(conf)
    with nginx_on(workdir, workdir / "site.conf", sock):
        yield sock
