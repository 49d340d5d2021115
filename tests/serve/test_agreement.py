"""`pipeline serve` and nginx agree where HTTP itself is at stake: the request forms nginx reads,
what it refuses while reading a request, the limits both take from the `serve` settings, idle
connections, and a warehouse that cannot be opened. Every error is
the API's error envelope, with the same status and bytes from both servers."""

from __future__ import annotations

import http.client
import socket
import ssl
from email.utils import formatdate
from pathlib import Path

import duckdb
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline.api.responses import TOO_LONG, VERSION_NOT_SUPPORTED
from pipeline.api.urls import HELP_PATH, OPENAPI_FILE, OPENAPI_PATH
from pipeline.build import build
from pipeline.settings import FIRST_HEADER_BUFFER, HEADER_BUFFER, load_settings
from tests.support.inputs import write_inputs
from tests.support.servers import (
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
    assert got.headers["allow"] == served.headers["allow"] == "GET, HEAD, OPTIONS"


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


# --- request heads nginx refuses, fragments, ranges, preconditions ---


def raw_request(address: Address, head: bytes, timeout: float = 30) -> Reply:
    """One request sent as these bytes (its head: request line, headers, blank line); an
    interim 100 Continue is skipped. `timeout` bounds each read."""
    conn = connection(address, timeout)
    try:
        conn.connect()
        assert conn.sock is not None
        conn.sock.sendall(head)
        response = http.client.HTTPResponse(
            conn.sock, method="HEAD" if head.startswith(b"HEAD ") else "GET"
        )
        response.begin()
        body = response.read()
        headers = {k.lower(): v for k, v in response.getheaders()}
        return Reply(response.status, body, headers.get("content-type", ""), headers)
    finally:
        conn.close()


def raw_both(nginx_socket: Path, serve_port: int, head: bytes, timeout: float = 30) -> Reply:
    a, b = raw_request(nginx_socket, head, timeout), raw_request(serve_port, head, timeout)
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
def test_preconditions_get_the_whole_body_if_none_match_a_304(
    nginx_socket: Path, serve_port: int, sample_build: Path, target: str
) -> None:
    """Both servers answer whole bodies to preconditions: no 412, and If-Modified-Since is not
    answered (no Last-Modified is sent), nor an If-Range date; an If-None-Match naming the ETag
    (nginx's of the file), or `*`, is 304 from both, a Range beside it too. (One byte range
    is answered: tests/serve/test_bulk.py.)"""
    name = OPENAPI_FILE if target == OPENAPI_PATH else f"{INVENTORY.lstrip('/')}/index.json"
    stat = (sample_build / "site" / name).stat()
    etag = f'"{int(stat.st_mtime):x}-{stat.st_size:x}"'  # nginx's ETag of the file
    whole = request(serve_port, target).body
    for headers in (
        {"Range": "bytes=0-9", "If-Range": formatdate(stat.st_mtime, usegmt=True)},
        {"If-Modified-Since": formatdate(stat.st_mtime, usegmt=True)},
        {"If-None-Match": etag, "If-Modified-Since": formatdate(stat.st_mtime, usegmt=True)},
        {"If-None-Match": '"other", W/"another"'},
        {"If-Match": '"x"'},
        {"If-Unmodified-Since": formatdate(0, usegmt=True)},
    ):
        got, _ = both(nginx_socket, serve_port, target, headers=headers)
        assert (got.status, got.body) == (200, whole), headers
        assert "last-modified" not in got.headers
    for headers in (
        {"If-None-Match": etag},
        {"If-None-Match": f'"other", W/{etag}'},
        {"If-None-Match": "*"},
        {"If-None-Match": etag, "If-Match": '"x"'},  # `pipeline serve` behind nginx answers
        {"If-None-Match": etag, "Range": "bytes=0-9"},
    ):
        got, served = both(nginx_socket, serve_port, target, headers=headers)
        assert (got.status, got.body, got.headers["etag"]) == (304, b"", etag), headers
        assert served.headers["etag"] == etag


# --- requests answered at once, as nginx answers them -------------------------------------------

# Short: a server that holds the connection without answering fails the test in seconds.
PROMPT = 5.0


def client_hello() -> bytes:
    """The first bytes a TLS client sends (its ClientHello), as Python's ssl writes them."""
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = ssl.create_default_context().wrap_bio(incoming, outgoing, server_hostname="localhost")
    with pytest.raises(ssl.SSLWantReadError):
        tls.do_handshake()
    return outgoing.read()


@pytest.mark.parametrize("target", [OPENAPI_PATH, f"{INVENTORY}?limit=3"])
def test_expect_100_continue_without_a_body_is_answered(
    nginx_socket: Path, serve_port: int, target: str
) -> None:
    """nginx sends 100 Continue, then the answer; `pipeline serve` the answer (a 100 is only
    an invitation to send a body, and there is none)."""
    head = f"GET {target} HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\n\r\n".encode()
    got = raw_both(nginx_socket, serve_port, head, PROMPT)
    assert (got.status, got.body) == (200, request(serve_port, target).body)


@pytest.mark.parametrize(
    "head",
    [
        f"GET {OPENAPI_PATH} HTTP/1.1\nHost: a\n\n",
        f"GET {OPENAPI_PATH} HTTP/1.1\r\nHost: a\nAccept: */*\r\n\n",
        f"GET {OPENAPI_PATH} HTTP/1.0\n\r\n",
        f"GET {INVENTORY}?limit=3 HTTP/1.1\nHost: a\nX-Long: {'a' * 5000}\n\n",
    ],
    ids=["lf", "mixed", "lf-crlf-1.0", "query"],
)
def test_a_head_with_bare_lf_line_ends_is_read(
    nginx_socket: Path, serve_port: int, head: str
) -> None:
    target = head.split(" ")[1]
    got = raw_both(nginx_socket, serve_port, head.encode(), PROMPT)
    assert (got.status, got.body) == (200, request(serve_port, target).body)


def test_a_tls_client_hello_on_the_plain_port_is_400_at_once(
    nginx_socket: Path, serve_port: int
) -> None:
    got = raw_both(nginx_socket, serve_port, client_hello(), PROMPT)
    assert (got.status, orjson.loads(got.body)) == (400, envelope(MALFORMED))


# --- request heads read as nginx reads them ------------------------------------------------------


def status_line(address: Address, head: bytes) -> bytes:
    """The status line of the answer to these bytes."""
    conn = connection(address, PROMPT)
    try:
        conn.connect()
        assert conn.sock is not None
        conn.sock.sendall(head)
        return conn.sock.makefile("rb").readline().rstrip(b"\r\n")
    finally:
        conn.close()


@pytest.mark.parametrize(
    ("lines", "status"),
    [
        (["X-A: b", " c"], 400),  # obs-fold: a line folded onto the last
        (["X-A: b", "\tc"], 400),
        (["XYZ"], 200),  # no colon: a header with an empty value
        (["Accept: */*", "X-Flag", "Accept-Language: en"], 200),
    ],
    ids=["obs-fold", "obs-fold-tab", "no-colon", "no-colon-between"],
)
def test_a_header_line_is_read_as_nginx_reads_it(
    nginx_socket: Path, serve_port: int, lines: list[str], status: int
) -> None:
    head = f"GET {OPENAPI_PATH} HTTP/1.1\r\nHost: a\r\n" + "".join(f"{h}\r\n" for h in lines)
    got = raw_both(nginx_socket, serve_port, head.encode() + b"\r\n", PROMPT)
    assert got.status == status
    if status == 400:
        assert orjson.loads(got.body) == envelope(MALFORMED)


@pytest.mark.parametrize("character", ["\t", "\x01", "\x1f", "\x7f"])
@pytest.mark.parametrize("target", [OPENAPI_PATH, f"{INVENTORY}?limit=3", "/nowhere"])
def test_a_control_character_in_the_target_is_400(
    nginx_socket: Path, serve_port: int, target: str, character: str
) -> None:
    head = f"GET {target}{character}x HTTP/1.1\r\nHost: a\r\n\r\n".encode()
    got = raw_both(nginx_socket, serve_port, head, PROMPT)
    assert (got.status, orjson.loads(got.body)) == (400, envelope(MALFORMED))


def head_of(lines: list[int], request_line: str = f"GET {OPENAPI_PATH} HTTP/1.1") -> bytes:
    """A head of header lines of these sizes (each with its CRLF; at least 12 bytes), after
    `Host`."""
    head = f"{request_line}\r\nHost: a\r\n".encode()
    for n, size in enumerate(lines):
        name = b"X-%05d: " % n
        head += name + b"a" * (size - len(name) - 2) + b"\r\n"
    return head + b"\r\n"


def _filled() -> list[int]:
    """Header lines that fill nginx's buffers to the byte: the first buffer, then the four
    large ones (the default 64 KiB), leaving room for the blank line: 66,560 bytes."""
    first = FIRST_HEADER_BUFFER - len(head_of([])) + 2
    return [first, HEADER_BUFFER, HEADER_BUFFER, HEADER_BUFFER, HEADER_BUFFER - 2]


@pytest.mark.parametrize(
    ("lines", "status"),
    [
        ([12] * 999, 200),  # with Host: 1000 header lines
        ([12] * 1000, 431),  # 1001
        (_filled(), 200),  # 65 KiB, more than 64 KiB
        ([*_filled()[:-1], _filled()[-1] + 1], 431),  # one byte more
        ([5500] * 9, 431),  # 49,500 bytes, but a large buffer holds two lines of 5500, not three
        ([5500] * 8, 200),
        ([16384, 16384, 16384, 16384], 431),  # four full buffers: the blank line needs a fifth
    ],
    ids=["1000-lines", "1001-lines", "65k-filled", "65k-filled+1", "9x5500", "8x5500", "4x16k"],
)
def test_a_head_fits_as_nginx_fills_its_buffers(
    nginx_socket: Path, serve_port: int, lines: list[int], status: int
) -> None:
    """nginx reads a head into a first buffer of 1 KiB, then into the large ones, each begun
    with the line the last one cut; more than 1000 header lines are 431 too. The 431 has an
    HTTP/1.1 status line, as nginx's."""
    head = head_of(lines)
    got = raw_both(nginx_socket, serve_port, head, PROMPT)
    assert got.status == status, len(head)
    if status == 431:
        assert orjson.loads(got.body) == envelope(HEADERS_TOO_LARGE)
        assert status_line(serve_port, head).startswith(b"HTTP/1.1 431 ")


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    lines=st.lists(st.integers(12, HEADER_BUFFER + 100), min_size=3, max_size=12),
    target=st.integers(0, 3000),
)
def test_both_servers_refuse_the_same_heads(
    nginx_socket: Path, serve_port: int, lines: list[int], target: int
) -> None:
    """Heads around the limit, of lines of any size and a target of any length: the same
    answer from both servers."""
    head = head_of(lines, f"GET {OPENAPI_PATH}?{'a' * target} HTTP/1.1")
    raw_both(nginx_socket, serve_port, head, PROMPT)


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
