"""The HTTP around the bytes, alike from `pipeline serve` and the generated nginx: an ETag on every
200 (a file's nginx's own, kept across a build while the bytes are, a live answer's a hash of
them), 304 to If-None-Match, gzip on the fly with Vary, Cache-Control, CORS on every answer,
HEAD as GET without a body; freshness until the next scheduled publish; the CORS preflight;
nginx's cache of the live answers, keyed by the release; and a storefront on another origin
making every kind of request to both servers in headless Chromium."""

from __future__ import annotations

import gzip
import html
import re
import shutil
import subprocess
import sys
from contextlib import ExitStack
from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson
import pytest

from pipeline.api.http import body_etag, file_etag, next_publish
from pipeline.build import build
from pipeline.settings import ServeSettings, load_settings
from tests.support.around import (
    CORS,
    assert_error_headers,
    assert_fresh,
    assert_http_around,
    publish_ahead,
)
from tests.support.inputs import ROOT, SAMPLE, raise_prices
from tests.support.servers import envelope, preview_server, request, running_nginx
from tests.support.targets import bulk_targets

SUMMARY = "/v1.39.0/stores/tiny7/inventory/products"
SUMMARY_FILE = "v1.39.0/stores/tiny7/inventory/products/index.json"
# Answered live (no page is materialised with limit=3): the store whose prices change.
LIVE = "/v1.39.0/stores/card-cellar/inventory/products?limit=3&sort=name%20desc"
CELLAR_FILE = "v1.39.0/stores/card-cellar/inventory/products/index.json"
CELLAR = "/v1.39.0/stores/card-cellar/inventory/products"
# The storefront and nginx, in a network namespace of their own (`tests/support/browser.py`).
BROWSER = ("unshare", "-rn", sys.executable, "-m", "tests.support.browser")


@pytest.fixture(params=["serve", "nginx"])
def server(request: pytest.FixtureRequest, serve_port: int, nginx_socket: Path) -> int | Path:
    return serve_port if request.param == "serve" else nginx_socket


def test_a_page_has_nginx_s_etag_and_everything_around_it(
    server: int | Path, sample_build: Path
) -> None:
    file = sample_build / "site" / SUMMARY_FILE
    assert assert_http_around(server, SUMMARY, file.read_bytes()) == file_etag(file.stat())


def test_a_live_answer_has_a_hash_of_its_bytes_and_everything_around_it(
    server: int | Path, serve_port: int
) -> None:
    body = request(serve_port, LIVE).body
    assert assert_http_around(server, LIVE, body) == body_etag(body)


@pytest.mark.parametrize(
    ("target", "method", "status"),
    [
        ("/v1.39.0/nowhere", "GET", 404),  # nginx's own 404, compressed when asked
        ("/v1.39.0/stores/nobody/inventory/products", "GET", 404),  # live
        (f"{SUMMARY}?offset=abc", "GET", 400),  # live
        ("v1.39.0/help/index", "GET", 400),  # refused while the request is read
        (SUMMARY, "POST", 405),
        ("/v1.39.0/nowhere", "HEAD", 404),
    ],
)
def test_errors_are_never_kept_and_readable_from_any_origin(
    server: int | Path, serve_port: int, nginx_socket: Path, target: str, method: str, status: int
) -> None:
    """no-store, CORS, no ETag; the envelope, compressed or not; the same `Allow` from both."""
    plain = request(serve_port, target, method=method)
    for headers in ({}, {"Accept-Encoding": "gzip"}):
        got = request(server, target, method=method, headers=headers)
        assert got.status == status
        assert_error_headers(got)
        zipped = got.headers.get("content-encoding") == "gzip"
        assert (gzip.decompress(got.body) if zipped and got.body else got.body) == plain.body
    allowed = {
        request(s, target, method=method).headers.get("allow") for s in (serve_port, nginx_socket)
    }
    assert len(allowed) == 1


def test_a_header_waitress_refuses_is_an_error_with_the_same_headers(
    serve_port: int, nginx_socket: Path
) -> None:
    for address in (serve_port, nginx_socket):
        got = request(address, SUMMARY, headers={"X-Long": "a" * 20_000})
        assert got.status == 431
        assert_error_headers(got)


def test_nginx_keeps_live_answers_until_the_next_build_and_pages_keep_their_etag(
    tmp_path: Path,
) -> None:
    """A live URL asked again is nginx's cached answer: it comes while `pipeline serve` is
    stopped. After the next build (one store's prices raised) the same URL is not: the key
    names the release, so it goes to the upstream, which is down (503). An unchanged page keeps
    its ETag across the build (304 to last night's), a changed one gets another (200)."""
    inputs, output = tmp_path / "in", tmp_path / "out"
    shutil.copytree(SAMPLE, inputs)
    build(load_settings(None, input=inputs, output=output))
    site = output / "site"
    with ExitStack() as stack:
        with preview_server(output) as port:
            sock = stack.enter_context(running_nginx(tmp_path / "n", site, f"127.0.0.1:{port}"))
            first = request(sock, LIVE)
            assert first.status == 200
        assert request(sock, "/v1.39.0/stores/card-cellar/inventory/products?limit=4").status == 503
        cached = request(sock, LIVE)
        assert (cached.status, cached.body) == (200, first.body)
        assert cached.headers["etag"] == first.headers["etag"] == body_etag(first.body)
        revalidated = request(sock, LIVE, headers={"If-None-Match": first.headers["etag"]})
        assert revalidated.status == 304
        head = request(sock, LIVE, method="HEAD")
        assert (head.status, head.body, head.headers["etag"]) == (200, b"", first.headers["etag"])
        summary, cellar = request(sock, SUMMARY), request(sock, CELLAR)
        raise_prices(inputs / "stores" / "listings" / "card-cellar.csv")
        build(load_settings(None, input=inputs, output=output))
        assert request(sock, LIVE).status == 503  # not last night's answer from the cache
        kept = request(sock, SUMMARY, headers={"If-None-Match": summary.headers["etag"]})
        assert (kept.status, kept.headers["etag"]) == (304, summary.headers["etag"])
        assert file_etag((site / SUMMARY_FILE).stat()) == summary.headers["etag"]
        changed = request(sock, CELLAR, headers={"If-None-Match": cellar.headers["etag"]})
        assert changed.status == 200 and changed.body == (site / CELLAR_FILE).read_bytes()
        assert changed.headers["etag"] != cellar.headers["etag"]


def test_the_next_publish_is_nginx_s_next_time_of_day_in_utc() -> None:
    """nginx's `expires @HH:MM` counts to the time's next occurrence: today's while it is still
    ahead, else tomorrow's, and tomorrow's at the very second (`ngx_next_time`)."""
    day = datetime(2026, 3, 29, tzinfo=UTC)  # European clocks change that night; UTC's do not
    for now, at, then in [
        (timedelta(hours=4, minutes=29, seconds=59), "04:30", timedelta(hours=4, minutes=30)),
        (timedelta(hours=4, minutes=30), "04:30", timedelta(days=1, hours=4, minutes=30)),
        (timedelta(hours=23, minutes=59, seconds=59), "00:00", timedelta(days=1)),
        (timedelta(0), "00:00", timedelta(days=1)),
        (timedelta(hours=12), "23:59", timedelta(hours=23, minutes=59)),
    ]:
        assert next_publish(int((day + now).timestamp()), at) == int((day + then).timestamp())


def test_answers_are_fresh_until_the_next_scheduled_publish_alike_on_both_servers(
    sample_build: Path, serve_port: int, tmp_path: Path
) -> None:
    """With `serve.publish_at` set, `pipeline serve` and nginx in front of it send the next
    publish as Expires and the seconds to it from their own Date as max-age, on 200, 206, 304
    and a preflight's 204, live answers and files alike; errors are no-store, with no Expires.
    The schedule is two hours after the Date of a first answer: ahead, whatever the clock."""
    at = publish_ahead(request(serve_port, SUMMARY))
    parquet = next(t for t in bulk_targets(sample_build) if t.endswith(".parquet"))
    site = sample_build / "site"
    live = request(serve_port, LIVE).body
    with (
        preview_server(sample_build, {"PIPELINE_SERVE__PUBLISH_AT": at}) as port,
        running_nginx(
            tmp_path / "n", site, f"127.0.0.1:{port}", ServeSettings(publish_at=at)
        ) as sock,
    ):
        for address in (port, sock):
            assert_http_around(address, SUMMARY, (site / SUMMARY_FILE).read_bytes(), at)
            assert_http_around(address, LIVE, live, at)
            part = request(address, parquet, headers={"Range": "bytes=0-3"})
            assert part.status == 206
            assert_fresh(part, at)
            asked = request(address, SUMMARY, method="OPTIONS")
            assert asked.status == 204
            assert_fresh(asked, at)
            for target, method in (("/v1.39.0/nowhere", "GET"), (SUMMARY, "POST")):
                assert_error_headers(request(address, target, method=method))
            # a token is no cache's: never fresh, whatever the schedule
            form = b"grant_type=client_credentials&client_id=a"
            sent = {"Content-Type": "application/x-www-form-urlencoded"}
            sent["Content-Length"] = str(len(form))
            token = request(address, "/token", "POST", sent, form)
            assert (token.status, token.headers["cache-control"]) == (200, "no-store")
            assert "expires" not in token.headers and "etag" not in token.headers


def test_a_cors_preflight_is_204_with_the_methods_and_the_headers_asked(
    server: int | Path, sample_build: Path
) -> None:
    """OPTIONS, for any URL: 204, no body, the methods, the request headers asked for echoed
    (none asked, none echoed), CORS and no caching past the answers' own."""
    asked = "authorization,if-none-match,range"
    for target in (SUMMARY, LIVE, "/v1.39.0/nowhere", bulk_targets(sample_build)[0]):
        for headers in ({"Access-Control-Request-Headers": asked}, {}):
            got = request(
                server,
                target,
                method="OPTIONS",
                headers={"Origin": "http://shop.example", "Access-Control-Request-Method": "GET"}
                | headers,
            )
            assert (got.status, got.body) == (204, b""), target
            assert got.headers["access-control-allow-methods"] == "GET, HEAD, POST, OPTIONS"
            assert got.headers.get("access-control-allow-headers") == (asked if headers else None)
            assert {k: got.headers.get(k) for k in CORS} == CORS
            assert "content-type" not in got.headers and "etag" not in got.headers
            assert_fresh(got, None)


def test_a_storefront_on_another_origin_reads_every_kind_of_request_in_chromium(
    sample_build: Path, tmp_path: Path
) -> None:
    """The storefront's page (its own origin, 127.0.0.1:8081) asks nginx (127.0.0.1:8080) and
    `pipeline serve` (its own port) for a store's summary, then the same with If-None-Match
    naming its ETag (a header that needs a CORS preflight), a byte range of a bulk file (its
    Content-Range readable only where exposed), the summary with Authorization (a preflight
    again), and a 404; each is read, in a network namespace of the test's own
    (`tests/support/browser.py`), one Chromium for all."""
    missing = "/v1.39.0/nowhere"
    parquet = next(t for t in bulk_targets(sample_build) if t.endswith(".parquet"))
    asks: list[dict[str, object]] = []
    for server in ("nginx", "serve"):
        first = len(asks)
        asks += [
            {"server": server, "target": SUMMARY, "headers": {}},
            {"server": server, "target": SUMMARY, "headers": {}, "etagOf": first},
            {"server": server, "target": parquet, "headers": {"Range": "bytes=0-3"}},
            {"server": server, "target": SUMMARY, "headers": {"Authorization": "bearer x"}},
            {"server": server, "target": missing, "headers": {}},
        ]
    done = subprocess.run(
        [*BROWSER, str(sample_build), str(tmp_path), orjson.dumps(asks).decode()],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=ROOT,
    )
    shown = re.search(r'<pre id="out">(.*?)</pre>', done.stdout, re.S)
    assert shown is not None, done.stderr[-2000:]
    read = orjson.loads(html.unescape(shown[1]))
    file = sample_build / "site" / SUMMARY_FILE
    etag = f"W/{file_etag(file.stat())}"  # Chromium asks for gzip
    whole = (sample_build / "site" / parquet.lstrip("/")).read_bytes()
    for server in range(2):
        plain, conditional, part, authorized, error = read[server * 5 : server * 5 + 5]
        assert (plain["status"], plain["etag"]) == (200, etag), plain
        assert plain["body"] == file.read_text(encoding="utf-8")
        assert (conditional["status"], conditional["body"]) == (304, ""), conditional
        assert (part["status"], part["body"]) == (206, whole[:4].decode()), part
        assert part["range"] == f"bytes 0-3/{len(whole)}"
        assert (authorized["status"], authorized["body"]) == (200, plain["body"]), authorized
        assert error["status"] == 404 and orjson.loads(error["body"]) == envelope("URL not found.")
