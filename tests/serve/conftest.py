"""The servers under test, over real sockets: `pipeline serve` as a subprocess (it reports the
port it took) and nginx (Debian's package, installed by `make system-deps`) on the generated
configuration, listening on a unix-domain socket, with the preview server as its upstream."""

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
from urllib.parse import quote_plus

import orjson
import pytest
from hypothesis import strategies as st

from pipeline.api.catalog import CATALOG_OPERATIONS
from pipeline.api.operations import STORE_OPERATIONS
from pipeline.api.urls import (
    CATEGORIES_PATH,
    HELP_PATH,
    OPENAPI_PATH,
    PRODUCTS_DIR,
    STORES_DIR,
    VERSION,
)
from pipeline.export import nginx
from pipeline.export.nginx.live import LIVE
from tests import reference
from tests.conftest import SAMPLE

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
        conn.putrequest(method, target, skip_accept_encoding=True)
        for name, value in (headers or {}).items():
            conn.putheader(name, value)
        conn.endheaders(body)
        response = conn.getresponse()
        body = response.read()
        headers = {k.lower(): v for k, v in response.getheaders()}
        return Reply(response.status, body, headers.get("content-type", ""), headers)
    finally:
        conn.close()


def both(nginx_socket: Path, serve_port: int, target: str, **kw: Any) -> tuple[Reply, Reply]:
    """The same request to nginx and to the preview server: the same status, type and bytes."""
    a, b = request(nginx_socket, target, **kw), request(serve_port, target, **kw)
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


@pytest.fixture(scope="session")
def serve_port(sample_build: Path) -> Iterator[int]:
    """`pipeline serve` on the sample's build, one for every test that only asks it."""
    with preview_server(sample_build) as port:
        yield port


@pytest.fixture(scope="module")
def sample_data() -> reference.Data:
    """The shipped sample as the reference model reads it."""
    return reference.load_directory(SAMPLE)


def query_string(draw: st.DrawFn, params: dict[str, list[str]], max_size: int) -> str:
    """A query string of up to `max_size` of `params` (name -> values), each name spelled in
    one of three cases, percent-encoded."""
    parts = []
    for name in draw(st.lists(st.sampled_from(sorted(params)), max_size=max_size)):
        spelled = draw(st.sampled_from([name, name.lower(), name.upper()]))
        parts.append(f"{quote_plus(spelled)}={quote_plus(draw(st.sampled_from(params[name])))}")
    return "&".join(parts)


@contextmanager
def running_nginx(
    workdir: Path, site: Path, upstream: str, limits: ServeSettings | None = None
) -> Iterator[Path]:
    """nginx on the generated configuration (with the `serve` settings `limits`), listening on a
    unix-domain socket in `workdir`."""
    assert NGINX, "nginx is not installed: run `make system-deps` (or `make test`)"
    workdir.mkdir(parents=True, exist_ok=True)
    sock = workdir / "nginx.sock"
    assert len(str(sock)) < 100, f"{sock}: too long for a unix-domain socket (set a short TMPDIR)"
    limited = {"limits": limits} if limits is not None else {}  # the default: nginx.render's
    (workdir / "site.conf").write_text(nginx.render(site, f"unix:{sock}", upstream, **limited))
    temp = " ".join(
        f"{name}_temp_path {workdir / name};"
        for name in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    (workdir / "nginx.conf").write_text(
        # As root, nginx would read the site as `nobody`; the test's files are private.
        f"daemon off;\nmaster_process off;\nuser {getpass.getuser()};\npid {workdir / 'nginx.pid'};\n"
        f"error_log {workdir / 'error.log'} warn;\nevents {{ worker_connections 512; }}\n"
        f"http {{ access_log off; {temp} include {workdir / 'site.conf'}; }}\n"
    )
    log = workdir / "error.log"
    with log.open("ab") as stderr:
        process = subprocess.Popen(
            [NGINX, "-p", str(workdir), "-c", str(workdir / "nginx.conf"), "-e", str(log)],
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
    try:
        wait_until_up(sock, process, log)
        yield sock
    finally:
        process.terminate()
        process.wait(10)


@pytest.fixture(scope="session")
def nginx_socket(
    sample_build: Path, serve_port: int, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Path]:
    """nginx on the sample's site in front of `serve_port`, one for every test that only asks it."""
    with running_nginx(
        tmp_path_factory.mktemp("nginx"), sample_build / "site", f"127.0.0.1:{serve_port}"
    ) as sock:
        yield sock


def materialised_targets(output: Path) -> list[str]:
    """The canonical URL of every published page."""
    targets = []
    for entry in orjson.loads((output / "manifest.json").read_bytes())["files"]:
        path: str = entry["path"]
        if path.endswith(".json") and "/help/" not in path:
            resource, name = path.rsplit("/", 1)
            query = name.removesuffix(".json")
            targets.append(f"/{resource}" + ("" if query == "index" else f"?{query}"))
    return targets


# A request that goes to the live upstream, with its headers.
LiveRequest = tuple[str, dict[str, str]]


def live_requests() -> list[LiveRequest]:
    """A request for each way nginx goes to the live upstream, from the operation registry: each
    store operation (the summary, and every one of `STORE_OPERATIONS`) for a store with no
    file (lower case: its file is missing) and a key nginx reads no file for (upper case), the
    category listing in an order that has no file, a request with a precondition, and each
    catalog and price operation (`CATALOG_OPERATIONS`)."""
    requests: list[LiveRequest] = []
    operations = [PRODUCTS_DIR, *(op.path.replace("{productId}", "1") for op in STORE_OPERATIONS)]
    for store in ("nobody", "NOBODY"):
        requests += [(f"/{STORES_DIR}/{store}/{path}", {}) for path in operations]
    requests += [(f"{CATEGORIES_PATH}?sortOrder=categoryId", {}), (OPENAPI_PATH, {"If-Match": "*"})]
    # each catalog and price operation, for an id no page has, or a query string nginx does not
    # read as the API does (a page's location goes to the upstream when it has no file)
    any_id = re.compile(r"\{\w+\}")
    requests += [
        (f"/{VERSION}/{any_id.sub('999999', op.path)}{'' if op.id_name else '?x=%FF'}", {})
        for op in CATALOG_OPERATIONS
    ]
    return requests


LOCATION = re.compile(r'\n    location ~ "((?:[^"\\]|\\.)*)" \{\n(.*?)\n    \}', re.DOTALL)


def live_locations(conf: str) -> list[re.Pattern[str]]:
    """The regular expressions of the configuration's locations that may go to `@live`, as
    Python reads them (nginx's escapes undone, PCRE's named groups renamed)."""
    patterns = []
    for found in LOCATION.finditer(conf):
        if LIVE in found[2]:
            pattern = re.sub(r"\\(.)", r"\1", found[1]).replace("(?<", "(?P<")
            patterns.append(re.compile(pattern))
    return patterns


PIP = ("-m", "pip", "install", "-q", "--disable-pip-version-check")


def pip_installed(tmp_path_factory: pytest.TempPathFactory, packages: tuple[str, ...]) -> Path:
    """A throwaway folder with `packages` installed by pip (for a public client's own calls);
    without the package index (an offline machine), the test is skipped with the reason."""
    target = tmp_path_factory.mktemp(packages[0].partition("=")[0])
    try:
        done = subprocess.run(
            [sys.executable, *PIP, "--target", str(target), *packages],
            capture_output=True,
            text=True,
            timeout=180,
        )
    except subprocess.TimeoutExpired:
        pytest.skip("pip install took over 180 s (is the package index reachable?)")
    if done.returncode != 0:
        pytest.skip(f"pip install {packages[0]} failed (offline?): {done.stderr.strip()[-300:]}")
    return target


def run_client(client_path: Path, script: str, *args: str, timeout: float = 120) -> str:
    """A public client's script, run with its installed folder (`pip_installed`) on the path:
    its standard output, once it exited 0."""
    done = subprocess.run(
        [sys.executable, "-c", script, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "PYTHONPATH": str(client_path)},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout
