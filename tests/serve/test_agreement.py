"""`pipeline serve` and nginx agree where HTTP itself is at stake: the request forms nginx reads,
what it refuses while reading a request, the limits both take from the `serve` settings, idle
connections, and a warehouse that cannot be opened (issue 15, items 3 and 10). Every error is
the API's error envelope, with the same status and bytes from both servers."""

from __future__ import annotations

import http.client
import socket
from email.utils import formatdate
from pathlib import Path

import duckdb
import orjson
import pytest

from pipeline.api.responses import TOO_LONG, VERSION_NOT_SUPPORTED
from pipeline.api.urls import HELP_PATH, OPENAPI_FILE, OPENAPI_PATH
from pipeline.build import build
from pipeline.settings import load_settings
from tests.conftest import write_inputs
from tests.serve.conftest import (
    Address,
    Reply,
    both,
    connection,
    envelope,
    preview_server,
    request,
    running_nginx,
)

INVENTORY = "/v1.39.0/stores/tiny7/inventory/products"
JSON = "application/json; charset=utf-8"
MALFORMED = "The request is malformed."
BODY_TOO_LARGE = "The request body is too large."
HEADERS_TOO_LARGE = "The request headers are too large."
UNAVAILABLE = "The service is unavailable."


@pytest.mark.parametrize(
    "origin",
    [INVENTORY, f"{INVENTORY}?sort=name&limit=3", "/v1.39.0/catalog/categories", HELP_PATH],
)
@pytest.mark.parametrize("prefix", ["http://inventory.example", "HTTPS://inventory.example:8443"])
def test_an_absolute_form_target_is_read_as_its_path(
    nginx_socket: Path, serve_port: int, prefix: str, origin: str
) -> None:
    """`GET http://host/path HTTP/1.1`, as a client sends it to a proxy."""
    got, _ = both(nginx_socket, serve_port, prefix + origin)
    assert (got.status, got.body) == (200, request(serve_port, origin).body)


@pytest.mark.parametrize(
    "target",
    [
        "/v1.39.0/stores/tiny7%00/inventory/products",
        "/v1.39.0/stores/%00/inventory/products",
        "/v1.39.0/stores/ti%ZZ/inventory/products",
        "/v1.39.0/help/index%",
        "/v1.39.0/help/index%4",
        "v1.39.0/help/index",
        "*",
    ],
)
def test_a_target_nginx_refuses_is_400_from_both(
    nginx_socket: Path, serve_port: int, target: str
) -> None:
    """An encoded NUL or a broken escape in the path, a target that is no path."""
    got, _ = both(nginx_socket, serve_port, target)
    assert (got.status, orjson.loads(got.body)) == (400, envelope(MALFORMED))


@pytest.mark.parametrize("target", [INVENTORY, HELP_PATH, "/nowhere"])
def test_trace_is_405_like_any_other_method(
    nginx_socket: Path, serve_port: int, target: str
) -> None:
    got, served = both(nginx_socket, serve_port, target, method="TRACE")
    message = "The requested resource does not support http method 'TRACE'."
    assert (got.status, orjson.loads(got.body)) == (405, envelope(message))
    assert got.headers["allow"] == served.headers["allow"] == "GET, HEAD"


def test_a_body_past_the_limit_is_413(nginx_socket: Path, serve_port: int) -> None:
    """Answered once the headers are read: the client need not send the body."""
    too_large = {"Content-Length": str(1048576 + 1)}  # serve.max_request_body_size's default
    got, _ = both(nginx_socket, serve_port, HELP_PATH, headers=too_large)
    assert (got.status, orjson.loads(got.body)) == (413, envelope(BODY_TOO_LARGE))


@pytest.mark.parametrize(
    "headers",
    [
        {"X-Long": "a" * 20_000},  # one line past nginx's 16 KiB buffer
        {f"X-Part-{n}": "a" * 8000 for n in range(13)},  # 104 kB, past the 64 KiB of the head
    ],
    ids=["a-line", "the-head"],
)
def test_headers_past_the_limit_are_431(
    nginx_socket: Path, serve_port: int, headers: dict[str, str]
) -> None:
    got, _ = both(nginx_socket, serve_port, HELP_PATH, headers=headers)
    assert (got.status, orjson.loads(got.body)) == (431, envelope(HEADERS_TOO_LARGE))


# --- request heads nginx refuses, fragments, ranges, preconditions (issue 15, item 10, review) ---


def raw_request(address: Address, head: bytes) -> Reply:
    """One request sent as these bytes (its head: request line, headers, blank line)."""
    conn = connection(address)
    try:
        conn.connect()
        assert conn.sock is not None
        conn.sock.sendall(head)
        response = http.client.HTTPResponse(conn.sock, method=head.split(b" ", 1)[0].decode())
        response.begin()
        body = response.read()
        headers = {k.lower(): v for k, v in response.getheaders()}
        return Reply(response.status, body, headers.get("content-type", ""), headers)
    finally:
        conn.close()


def raw_both(nginx_socket: Path, serve_port: int, head: bytes) -> Reply:
    a, b = raw_request(nginx_socket, head), raw_request(serve_port, head)
    assert (a.status, a.content_type, a.body) == (b.status, b.content_type, b.body), head[:200]
    return a


LINE = f"GET {OPENAPI_PATH} HTTP/1.1\r\n".encode()


@pytest.mark.parametrize(
    "head",
    [
        LINE + b"\r\n",  # HTTP/1.1 without Host
        LINE + b"Host: a\r\nHost: b\r\n\r\n",
        f"GET {OPENAPI_PATH} HTTP/1.0\r\nHost: a\r\nhost: b\r\n\r\n".encode(),
        LINE + b"Host: a\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        f"GET {OPENAPI_PATH} HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n".encode(),
        f"GET {OPENAPI_PATH} HTTP/0.9\r\nHost: a\r\n\r\n".encode(),
        f"GET {OPENAPI_PATH} HTTP/02.0\r\nHost: a\r\n\r\n".encode(),
    ],
    ids=["no-host", "two-hosts", "two-hosts-1.0", "length-and-chunked", "chunked-1.0", "0.9", "02"],
)
def test_a_head_nginx_refuses_is_400_from_both(
    nginx_socket: Path, serve_port: int, head: bytes
) -> None:
    """No Host in HTTP/1.1, two of them, Transfer-Encoding beside Content-Length (a request
    smuggling shape) or in HTTP/1.0, a version below 1.0."""
    got = raw_both(nginx_socket, serve_port, head)
    assert (got.status, orjson.loads(got.body)) == (400, envelope(MALFORMED))


@pytest.mark.parametrize(
    "head", [f"GET {OPENAPI_PATH} HTTP/1.0\r\n\r\n", LINE.decode() + "Host: a\r\n\r\n"]
)
def test_a_host_header_is_needed_from_http_1_1_on(
    nginx_socket: Path, serve_port: int, head: str
) -> None:
    got = raw_both(nginx_socket, serve_port, head.encode())
    assert (got.status, got.body) == (200, request(serve_port, OPENAPI_PATH).body)


@pytest.mark.parametrize("version", ["HTTP/2.0", "HTTP/3.0", "HTTP/2", "HTTP/10.0"])
def test_another_http_version_is_505_from_both(
    nginx_socket: Path, serve_port: int, version: str
) -> None:
    got = raw_both(nginx_socket, serve_port, f"GET {OPENAPI_PATH} {version}\r\n\r\n".encode())
    assert (got.status, orjson.loads(got.body)) == (505, envelope(VERSION_NOT_SUPPORTED))


@pytest.mark.parametrize(
    ("target", "same_as"),
    [
        (f"{OPENAPI_PATH}#x", OPENAPI_PATH),
        (f"{INVENTORY}?limit=3#x", f"{INVENTORY}?limit=3"),
        (f"{INVENTORY}#x?limit=3", INVENTORY),  # the query is part of the fragment
        (f"{HELP_PATH}#%00", HELP_PATH),
    ],
)
def test_a_fragment_is_dropped(
    nginx_socket: Path, serve_port: int, target: str, same_as: str
) -> None:
    got, _ = both(nginx_socket, serve_port, target)
    assert (got.status, got.body) == (200, request(serve_port, same_as).body)


@pytest.mark.parametrize(
    "target",
    [
        "/v1.39.0/stores/%00/" + "a" * 9000,  # past the 414 of 8 KiB: the NUL is found first
        "/v1.39.0/stores/%00/" + "a" * 17000,  # past nginx's buffer: 414 before the path is read
        "/v1.39.0/" + "a" * 70000,  # past the whole head's limit too
    ],
    ids=["nul-8k", "nul-16k", "70k"],
)
def test_a_long_target_with_a_nul(nginx_socket: Path, serve_port: int, target: str) -> None:
    got, _ = both(nginx_socket, serve_port, target)
    expected = 400 if len(target) < 16_000 else 414
    assert (got.status, orjson.loads(got.body)) == (
        expected,
        envelope(MALFORMED if expected == 400 else TOO_LONG),
    )


@pytest.mark.parametrize("target", [OPENAPI_PATH, INVENTORY])
def test_ranges_and_preconditions_get_the_whole_body(
    nginx_socket: Path, serve_port: int, sample_build: Path, target: str
) -> None:
    """Both servers answer whole bodies: no 206, 416, 304 or 412 (nginx would, from a file)."""
    name = OPENAPI_FILE if target == OPENAPI_PATH else f"{INVENTORY.lstrip('/')}/index.json"
    stat = (sample_build / "site" / name).stat()
    etag = f'"{int(stat.st_mtime):x}-{stat.st_size:x}"'  # nginx's ETag of the file
    whole = request(serve_port, target).body
    for headers in (
        {"Range": "bytes=0-9"},
        {"Range": "bytes=999999-"},
        {"If-None-Match": etag},
        {"If-None-Match": "*"},
        {"If-Modified-Since": formatdate(stat.st_mtime, usegmt=True)},
        {"If-Match": '"x"'},
        {"If-Unmodified-Since": formatdate(0, usegmt=True)},
    ):
        got, _ = both(nginx_socket, serve_port, target, headers=headers)
        assert (got.status, got.body) == (200, whole), headers


# --- idle connections ---------------------------------------------------------------------------


def test_idle_connections_do_not_starve_the_server(serve_port: int) -> None:
    """More idle connections than waitress's default connection_limit (100): a new request is
    still answered. The request's timeout only bounds a failure."""
    idle = [socket.create_connection(("127.0.0.1", serve_port)) for _ in range(120)]
    try:
        assert request(serve_port, HELP_PATH).status == 200
    finally:
        for sock in idle:
            sock.close()


# --- a warehouse that cannot be opened ----------------------------------------------------------


def test_a_warehouse_held_read_write_stops_only_the_live_answers(tmp_path: Path) -> None:
    """An analyst's DuckDB shell (read-write, its default) opened on the warehouse right after a
    publish: files and the help pages are served, live answers are 503 with the envelope, from
    both servers; once the shell is closed, the next live answer opens the warehouse."""
    listings = [{"storeKey": "s1", "skuId": 1000, "price": "1.00", "quantity": 1}]
    output = tmp_path / "out"
    build(
        load_settings(None, input=write_inputs(tmp_path / "in", listings=listings), output=output)
    )
    static = "/v1.39.0/stores/s1/inventory/products"
    live = f"{static}?sort=name"
    page = (output / "site" / static.lstrip("/") / "index.json").read_bytes()
    analyst = duckdb.connect(str(output / "warehouse.duckdb"))
    try:
        with (
            preview_server(output) as port,
            running_nginx(tmp_path / "nginx", output / "site", f"127.0.0.1:{port}") as sock,
        ):
            servers: tuple[Address, Address] = (port, sock)
            for address in servers:
                assert (request(address, static).status, request(address, static).body) == (
                    200,
                    page,
                )
                assert request(address, HELP_PATH).status == 200
                assert request(address, OPENAPI_PATH).status == 200
                got = request(address, live)
                assert (got.status, got.content_type, orjson.loads(got.body)) == (
                    503,
                    JSON,
                    envelope(UNAVAILABLE),
                )
            analyst.close()
            for address in servers:
                got = request(address, live)
                assert (got.status, orjson.loads(got.body)["totalItems"]) == (200, 1)
    finally:
        analyst.close()
