"""The token endpoint (docs/contract.md §10), on `pipeline serve`, the generated nginx and nginx
in front of a bucket: a POST of the client-credentials form answers the live service's token, at
`/token` and under the version; no cache keeps it; another grant type is a 400; a body past the
limit is 413; any other POST is still 405, and reads ignore the token."""

from __future__ import annotations

import gzip
import http.server
import json
import threading
import time
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import ClassVar

import pytest

from pipeline.export.nginx import render
from pipeline.export.nginx.bucket import BucketOrigin, release_map
from pipeline.paths import NGINX_CONF
from pipeline.serve.reader import RELEASE_MAP
from pipeline.settings import ServeSettings
from tests.support.servers import Reply, nginx_on, request

FORM = {"Content-Type": "application/x-www-form-urlencoded"}
CREDENTIALS = b"grant_type=client_credentials&client_id=PUBLIC-key&client_secret=s%3Dcret"
TOKEN_KEYS = ["access_token", "token_type", "expires_in", "userName", ".issued", ".expires"]


@pytest.fixture
def servers(nginx_socket: Path, serve_port: int, bucket_nginx_socket: Path) -> list[Path | int]:
    """The three servers: the generated nginx, `pipeline serve`, nginx in front of a bucket."""
    return [nginx_socket, serve_port, bucket_nginx_socket]


def post(address: Path | int, target: str, body: bytes, headers: dict[str, str] = FORM) -> Reply:
    """A POST of `body` (`request` sends the headers as given: its length among them)."""
    return request(address, target, "POST", {**headers, "Content-Length": str(len(body))}, body)


@pytest.mark.parametrize("target", ["/token", "/v1.39.0/token", "//token/?x=1"])
def test_a_client_credentials_form_gets_the_live_services_token(
    servers: list[Path | int], target: str
) -> None:
    for address in servers:
        before = int(time.time())
        got = post(address, target, CREDENTIALS)
        after = int(time.time())
        assert got.status == 200, (address, got.body)
        token = json.loads(got.body)
        assert list(token) == TOKEN_KEYS
        assert (token["token_type"], token["expires_in"], token["userName"]) == (
            "bearer",
            1209599,
            "PUBLIC-key",
        )
        assert len(token["access_token"]) >= 32
        issued = parsedate_to_datetime(token[".issued"])
        expires = parsedate_to_datetime(token[".expires"])
        assert token[".issued"].endswith(" GMT") and token[".expires"].endswith(" GMT")
        assert before <= issued.timestamp() <= after  # the request's time, not the build's
        assert (expires - issued).total_seconds() == 14 * 86400
        assert got.headers["cache-control"] == "no-store", got.headers
        assert "etag" not in got.headers
        assert got.headers["access-control-allow-origin"] == "*"
        again = post(address, target, CREDENTIALS)
        assert json.loads(again.body)["access_token"] != token["access_token"]  # opaque, fresh


def test_a_token_asked_as_clients_ask_it(servers: list[Path | int]) -> None:
    """The form under another Content-Type (one public client says JSON), compressed for a
    client that accepts it, `If-None-Match` naming nothing, a precondition nginx would send
    elsewhere (`If-Match`): the same kind of answer, which no cache keeps."""
    for address in servers:
        ifs = post(address, "/v1.39.0/token", CREDENTIALS, {**FORM, "If-Match": "*"})
        assert ifs.status == 200 and json.loads(ifs.body)["userName"] == "PUBLIC-key"
        assert (ifs.headers["cache-control"], "etag" in ifs.headers) == ("no-store", False)
        asked = {
            "Content-Type": "application/json",
            "Accept-Encoding": "gzip",
            "If-None-Match": "*",
        }
        got = post(address, "/token", CREDENTIALS, asked)
        assert (got.status, got.headers.get("content-encoding")) == (200, "gzip"), address
        assert json.loads(gzip.decompress(got.body))["userName"] == "PUBLIC-key"
        assert (got.headers["cache-control"], "etag" in got.headers) == ("no-store", False)


@pytest.mark.parametrize(
    ("body", "error"),
    [
        (b"grant_type=password&username=a&password=b", "unsupported_grant_type"),
        (b"client_id=a&client_secret=b", "unsupported_grant_type"),
        (b"", "unsupported_grant_type"),
        (b"grant_type=CLIENT_CREDENTIALS&client_id=a", "unsupported_grant_type"),
        (b"grant_type=client_credentials&client_secret=b", "invalid_client"),
    ],
)
def test_another_grant_type_is_a_400(servers: list[Path | int], body: bytes, error: str) -> None:
    for address in servers:
        got = post(address, "/token", body)
        assert (got.status, json.loads(got.body)) == (400, {"error": error}), address
        assert got.headers["cache-control"] == "no-store"


def test_other_methods_and_other_posts(servers: list[Path | int]) -> None:
    """GET /token is a path like any other (404); a POST anywhere else is 405; a body past
    `serve.max_request_body_size` is 413; a read with a token is the read without one."""
    past = str(ServeSettings().max_request_body_size + 1)  # said, not sent: refused first
    for address in servers:
        assert request(address, "/token").status == 404
        assert request(address, "/token", "PUT").status == 405
        for target in ("/v1.39.0/catalog/groups", "/tokens", "/v1.39.0/help/index", "/v1/token"):
            got = post(address, target, CREDENTIALS)
            assert got.status == 405, (address, target)
        got = request(address, "/token", "POST", {**FORM, "Content-Length": past})
        assert got.status == 413, address
        page = "/v1.39.0/catalog/groups?categoryId=3"
        read = request(address, page, headers={"Authorization": "Bearer not-a-token"})
        assert (read.status, read.body) == (200, request(address, page).body)


def test_every_read_ignores_a_token_on_every_server(
    nginx_socket: Path, serve_port: int, bucket_nginx_socket: Path
) -> None:
    """A page, a live answer and a bulk file asked with the token a client holds: the same
    status, body and validator as without it, nginx in front of the bucket included (where the
    bucket must not be asked with the client's credentials)."""
    token = json.loads(post(serve_port, "/token", CREDENTIALS).body)["access_token"]
    for address in (nginx_socket, serve_port, bucket_nginx_socket):
        for target in (
            "/v1.39.0/catalog/conditions",
            "/v1.39.0/stores/tiny7/inventory/products",
            "/v1.39.0/stores/tiny7/inventory/products?limit=3",
            "/v1.39.0/bulk/index.json",
        ):
            # with the token first: nginx's caches have not kept the answer yet
            read = request(address, target, headers={"Authorization": f"Bearer {token}"})
            plain = request(address, target)
            assert (read.status, read.body, read.headers.get("etag")) == (
                200,
                plain.body,
                plain.headers.get("etag"),
            ), (address, target)


class _Bucket(http.server.BaseHTTPRequestHandler):
    """A bucket that has nothing, and records the headers it was asked with."""

    asked: ClassVar[list[dict[str, str]]] = []

    def do_GET(self) -> None:
        self.asked.append({k.lower(): v for k, v in self.headers.items()})
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *_: object) -> None:
        pass


def test_nginx_asks_the_bucket_without_the_clients_token(serve_port: int, tmp_path: Path) -> None:
    """A client's `Authorization` is its business with the live service, not the bucket's: S3
    refuses a request whose Authorization it cannot read (400), which would fail every read of
    a client that authenticates. nginx in front of the bucket never passes it on."""
    bucket = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Bucket)
    threading.Thread(target=bucket.serve_forever, daemon=True).start()
    try:
        found = tmp_path / RELEASE_MAP
        found.write_text(release_map({"tiny7": "0123456789abcdef-a"}, "0123456789abcdef-c", "b"))
        origin = BucketOrigin(f"http://127.0.0.1:{bucket.server_port}", "/bucket/site", found)
        sock = tmp_path / "nginx.sock"
        limits = ServeSettings(nginx_cache=tmp_path / "cache")
        conf = render(tmp_path, f"unix:{sock}", f"127.0.0.1:{serve_port}", limits, bucket=origin)
        (tmp_path / NGINX_CONF).write_text(conf)
        with nginx_on(tmp_path, tmp_path / NGINX_CONF, sock):
            for target in (
                "/v1.39.0/catalog/conditions",
                "/v1.39.0/stores/tiny7/inventory/products",
            ):
                request(sock, target, headers={"Authorization": "Bearer a-token"})
    finally:
        bucket.shutdown()
        bucket.server_close()
    assert len(_Bucket.asked) >= 2  # the two reads (and nginx_on's own, which has none)
    assert [h.get("authorization") for h in _Bucket.asked] == [None] * len(_Bucket.asked)
