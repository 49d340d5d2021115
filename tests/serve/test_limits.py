"""The `serve` settings govern both servers: `pipeline serve` takes them from the settings (here
from the environment, as an operator would set them) and the generated nginx configuration
writes the same numbers."""

from __future__ import annotations

import re
import resource
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from pipeline.api.responses import BODY_TOO_LARGE, HEADERS_TOO_LARGE
from pipeline.api.urls import HELP_PATH
from pipeline.export import nginx
from pipeline.serve.protocol import NOFILE_HEADROOM
from pipeline.settings import ServeSettings, load_settings
from tests.support.servers import LISTENING, both, envelope, preview_server, running_nginx

LIMITS = ServeSettings(max_request_body_size=100, max_request_header_size=32768)


@pytest.fixture(scope="module")
def limited(
    sample_build: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Path, int]]:
    """Both servers with the `serve` settings LIMITS (the preview server's from the
    environment, as an operator would set them)."""
    env = {
        "PIPELINE_SERVE__MAX_REQUEST_BODY_SIZE": str(LIMITS.max_request_body_size),
        "PIPELINE_SERVE__MAX_REQUEST_HEADER_SIZE": str(LIMITS.max_request_header_size),
    }
    with (
        preview_server(sample_build, env) as port,
        running_nginx(
            tmp_path_factory.mktemp("nginx"), sample_build / "site", f"127.0.0.1:{port}", LIMITS
        ) as sock,
    ):
        yield sock, port


def test_the_serve_settings_set_both_servers_limits(limited: tuple[Path, int]) -> None:
    sock, port = limited
    body = LIMITS.max_request_body_size
    within, _ = both(sock, port, HELP_PATH, body=b"x" * body)
    assert within.status == 200
    past, _ = both(sock, port, HELP_PATH, headers={"Content-Length": str(body + 1)})
    assert (past.status, orjson.loads(past.body)) == (413, envelope(BODY_TOO_LARGE))
    lines = {f"X-Part-{n}": "a" * 4000 for n in range(5)}  # 20 kB: within 32 KiB
    assert both(sock, port, HELP_PATH, headers=lines)[0].status == 200
    lines = {f"X-Part-{n}": "a" * 4000 for n in range(10)}  # 40 kB: past it
    past, _ = both(sock, port, HELP_PATH, headers=lines)
    assert (past.status, orjson.loads(past.body)) == (431, envelope(HEADERS_TOO_LARGE))


def test_the_nginx_configuration_takes_the_serve_settings() -> None:
    limits = ServeSettings(
        max_request_header_size=49152, max_request_body_size=5000, channel_timeout=7
    )
    conf = nginx.render(Path("/srv/site"), "127.0.0.1:8080", "127.0.0.1:8000", limits)
    for directive in (
        "large_client_header_buffers 3 16384;",
        "client_max_body_size 5000;",
        "keepalive_timeout 7s;",
        "client_header_timeout 7s;",
        "client_body_timeout 7s;",
        "send_timeout 7s;",
    ):
        assert f"\n    {directive}\n" in conf, directive
    with pytest.raises(ValueError, match=r"serve\.max_request_header_size: .*multiple of 16384"):
        load_settings(None, serve={"max_request_header_size": 40000})


# --- open files ---------------------------------------------------------------------------------

NEEDED = 1000 + 8 + NOFILE_HEADROOM  # serve.connection_limit, serve.threads: the defaults


def start_with_open_files(output: Path, soft: int, hard: int) -> subprocess.Popen[str]:
    """`pipeline serve` started with this RLIMIT_NOFILE."""
    return subprocess.Popen(
        [sys.executable, "-m", "pipeline", "serve", "--output", str(output), "--port", "0"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard)),
    )


def test_serve_raises_its_open_files_limit(sample_build: Path) -> None:
    """A soft limit of 256 (the default connection_limit is 1000): raised before listening."""
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard != resource.RLIM_INFINITY and hard < NEEDED:
        pytest.skip(f"the hard limit {hard} is below {NEEDED}")
    process = start_with_open_files(sample_build, 256, hard)
    try:
        assert process.stderr is not None
        line = process.stderr.readline()
        assert LISTENING.fullmatch(line.rstrip("\n")), line
        limits = Path(f"/proc/{process.pid}/limits").read_text()
        found = re.search(r"^Max open files +([0-9]+)", limits, re.MULTILINE)
        assert found is not None and int(found[1]) >= NEEDED
    finally:
        process.terminate()
        process.wait(10)


def test_serve_refuses_to_start_below_the_connections(sample_build: Path) -> None:
    """A hard limit below connection_limit and headroom: one line, exit status 1."""
    process = start_with_open_files(sample_build, 256, 256)
    try:
        assert process.stderr is not None
        line = process.stderr.readline()
        assert line.startswith(f"serve failed: serve.connection_limit 1000 needs {NEEDED} "), line
        assert process.stderr.read() == ""  # up to the exit: one line
        assert process.wait(10) == 1
    finally:
        process.terminate()
        process.wait(10)
