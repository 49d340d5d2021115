"""The token endpoint (docs/contract.md §10), on `pipeline serve` and the generated nginx: a
POST of the client-credentials form answers the live service's token, at `/token` and under the
version; no cache keeps it; another grant type is a 400; a body past the limit is 413; any other
POST is still 405, and reads ignore the token."""

from __future__ import annotations

import gzip
import json
import time
from email.utils import parsedate_to_datetime
from pathlib import Path

import pytest

from pipeline.settings import ServeSettings
from tests.support.servers import Reply, request

FORM = {"Content-Type": "application/x-www-form-urlencoded"}
CREDENTIALS = b"grant_type=client_credentials&client_id=PUBLIC-key&client_secret=s%3Dcret"
TOKEN_KEYS = ["access_token", "token_type", "expires_in", "userName", ".issued", ".expires"]


def servers(nginx_socket: Path, serve_port: int) -> list[Path | int]:
    return [nginx_socket, serve_port]


def post(address: Path | int, target: str, body: bytes, headers: dict[str, str] = FORM) -> Reply:
    """A POST of `body` (`request` sends the headers as given: its length among them)."""
    return request(address, target, "POST", {**headers, "Content-Length": str(len(body))}, body)


@pytest.mark.parametrize("target", ["/token", "/v1.39.0/token", "//token/?x=1"])
def test_a_client_credentials_form_gets_the_live_services_token(
    nginx_socket: Path, serve_port: int, target: str
) -> None:
    for address in servers(nginx_socket, serve_port):
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


def test_a_token_asked_as_clients_ask_it(nginx_socket: Path, serve_port: int) -> None:
    """The form under another Content-Type (one public client says JSON), compressed for a
    client that accepts it, and `If-None-Match` naming nothing: the same kind of answer."""
    for address in servers(nginx_socket, serve_port):
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
def test_another_grant_type_is_a_400(
    nginx_socket: Path, serve_port: int, body: bytes, error: str
) -> None:
    for address in servers(nginx_socket, serve_port):
        got = post(address, "/token", body)
        assert (got.status, json.loads(got.body)) == (400, {"error": error}), address
        assert got.headers["cache-control"] == "no-store"


def test_other_methods_and_other_posts(nginx_socket: Path, serve_port: int) -> None:
    """GET /token is a path like any other (404); a POST anywhere else is 405; a body past
    `serve.max_request_body_size` is 413; a read with a token is the read without one."""
    too_big = b"grant_type=client_credentials&client_id=a&x=" + b"y" * (
        ServeSettings().max_request_body_size
    )
    for address in servers(nginx_socket, serve_port):
        assert request(address, "/token").status == 404
        assert request(address, "/token", "PUT").status == 405
        for target in ("/v1.39.0/catalog/groups", "/tokens", "/v1.39.0/help/index", "/v1/token"):
            got = post(address, target, CREDENTIALS)
            assert got.status == 405, (address, target)
        assert post(address, "/token", too_big).status == 413
        page = "/v1.39.0/catalog/groups?categoryId=3"
        read = request(address, page, headers={"Authorization": "Bearer not-a-token"})
        assert (read.status, read.body) == (200, request(address, page).body)
