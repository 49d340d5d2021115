"""The `serve` settings govern both servers: `pipeline serve` takes them from the settings (here
from the environment, as an operator would set them) and the generated nginx configuration
writes the same numbers (issue 15, item 10)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from pipeline.api.responses import BODY_TOO_LARGE, HEADERS_TOO_LARGE
from pipeline.api.urls import HELP_PATH
from pipeline.export import nginx
from pipeline.settings import ServeSettings, load_settings
from tests.serve.conftest import both, envelope, preview_server, running_nginx

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
