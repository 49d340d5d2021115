"""The HTTP around the bytes, alike from `pipeline serve` and the generated nginx: an ETag on every
200 (a file's nginx's own, kept across a build while the bytes are, a live answer's a hash of
them), 304 to If-None-Match, gzip on the fly with Vary, Cache-Control, CORS on every answer,
HEAD as GET without a body; nginx's cache of the live answers, keyed by the release; and a
storefront on another origin reading a store's summary in headless Chromium."""

from __future__ import annotations

import gzip
import html
import re
import shutil
import subprocess
import sys
from contextlib import ExitStack
from pathlib import Path

import orjson
import pytest

from pipeline.api.http import body_etag, file_etag
from pipeline.build import build
from pipeline.settings import load_settings
from tests.support.around import assert_error_headers, assert_http_around
from tests.support.inputs import ROOT, SAMPLE, raise_prices
from tests.support.servers import envelope, preview_server, request, running_nginx

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


def test_a_storefront_on_another_origin_reads_a_store_summary_in_chromium(
    sample_build: Path, tmp_path: Path
) -> None:
    """The storefront's page (its own origin, 127.0.0.1:8081) fetches the summary and a URL
    that is a 404 from nginx (127.0.0.1:8080), in a network namespace of the test's own
    (`tests/support/browser.py`), and writes what it could read into the page."""
    missing = "/v1.39.0/nowhere"
    done = subprocess.run(
        [*BROWSER, str(sample_build / "site"), str(tmp_path), SUMMARY, missing],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=ROOT,
    )
    shown = re.search(r'<pre id="out">(.*?)</pre>', done.stdout, re.S)
    assert shown is not None, done.stderr[-2000:]
    read = orjson.loads(html.unescape(shown[1]))
    file = sample_build / "site" / SUMMARY_FILE
    assert read[0] == {
        "target": SUMMARY,
        "status": 200,
        "etag": f"W/{file_etag(file.stat())}",  # Chromium asks for gzip
        "body": file.read_text(encoding="utf-8"),
    }
    assert read[1]["status"] == 404 and orjson.loads(read[1]["body"]) == envelope("URL not found.")
