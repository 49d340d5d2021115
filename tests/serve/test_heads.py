"""Request heads read as nginx reads them, by `pipeline serve` and the generated nginx alike:
If-None-Match lists, repeated headers (400 for those nginx keeps one of), Accept-Encoding as
nginx's gzip filter reads it, and a 304 that keeps the connection. The expected answers come
from nginx's own code (`ngx_http_test_if_match`, the header table of `ngx_http_request.c`,
`ngx_http_gzip_ok`), and both servers must give them, over raw sockets."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from pipeline.api.http import body_etag, file_etag
from tests.support.heads import RawClient, compared, pipelined
from tests.support.servers import Address, Reply, envelope, request
from tests.support.targets import bulk_targets

PAGE = "/v1.39.0/stores/tiny7/inventory/products"
PAGE_FILE = "v1.39.0/stores/tiny7/inventory/products/index.json"
LIVE = "/v1.39.0/stores/card-cellar/inventory/products?limit=3&sort=name%20desc"
MALFORMED = "The request is malformed."


@pytest.fixture(scope="module")
def raw() -> Iterator[RawClient]:
    kept = RawClient()
    yield kept
    kept.close()


def head_of(target: str, lines: list[str], method: str = "GET", version: str = "1.1") -> bytes:
    """A request head of these header lines (after `Host`), as bytes."""
    text = f"{method} {target} HTTP/{version}\r\nHost: a\r\n" + "".join(f"{h}\r\n" for h in lines)
    return (text + "\r\n").encode("latin-1")


def both_raw(raw: RawClient, servers: tuple[Address, Address], head: bytes) -> Reply:
    """The head sent to nginx and to `pipeline serve`: the same status, body and headers."""
    nginx_reply, serve_reply = (raw.send(address, head) for address in servers)
    assert compared(nginx_reply) == compared(serve_reply), head
    return nginx_reply


@pytest.fixture
def servers(nginx_socket: Path, serve_port: int) -> tuple[Address, Address]:
    return nginx_socket, serve_port


# --- If-None-Match lists -------------------------------------------------------------------------

# nginx's `ngx_http_test_if_match` (weak): `*` only as the whole value; otherwise each element
# in turn, a leading `W/` dropped, is the ETag when it is followed by spaces or tabs and then a
# comma or the end; an element that is not is skipped to its comma, and the commas, spaces and
# tabs after it too. The value is the line's, spaces (not tabs) trimmed at both ends.
NONE_MATCH = [
    ('"0-stale", *', 200),
    ('"0-stale",*', 200),
    ("*,", 200),
    ('"*"', 200),
    ("*", 304),
    ("  *  ", 304),
    ("*, ETAG", 304),
    ("junk, ETAG", 304),
    ("junk,ETAG", 304),
    (", ,ETAG", 304),
    (",,, ETAG ,", 304),
    ("ETAG,", 304),
    ("W/ETAG", 304),
    ('W/"0-stale", W/ETAG', 304),
    ('"0-stale" ETAG', 200),
    ("ETAG junk", 200),
    ("ETAG\t, junk", 304),
    ("\tETAG", 200),
    ("w/ETAG", 200),
    ("W/W/ETAG", 200),
    ("", 200),
]


@pytest.mark.parametrize(("value", "status"), NONE_MATCH, ids=[v for v, _ in NONE_MATCH])
def test_an_if_none_match_list_is_read_as_nginx_reads_it(
    raw: RawClient,
    servers: tuple[Address, Address],
    sample_build: Path,
    serve_port: int,
    value: str,
    status: int,
) -> None:
    """On a page (nginx's file ETag), a live answer (nginx's cached answer, the upstream's
    ETag) and a bulk file; plain and asking for gzip (the 304 compares the strong ETag)."""
    page_etag = file_etag((sample_build / "site" / PAGE_FILE).stat())
    live_etag = body_etag(request(serve_port, LIVE).body)
    bulk = next(t for t in bulk_targets(sample_build) if t.endswith(".csv"))
    bulk_etag = file_etag((sample_build / "site" / bulk.lstrip("/")).stat())
    for target, etag in ((PAGE, page_etag), (LIVE, live_etag), (bulk, bulk_etag)):
        for extra in ([], ["Accept-Encoding: gzip"]):
            lines = [f"If-None-Match: {value.replace('ETAG', etag)}", *extra]
            got = both_raw(raw, servers, head_of(target, lines))
            assert got.status == status, (target, lines)
            if status == 304:
                assert (got.body, got.headers["etag"]) == (b"", etag)


# --- repeated headers ----------------------------------------------------------------------------

# The headers of nginx's table read by `ngx_http_process_unique_header_line` (and Host): a second
# line of one is 400. Content-Length is refused by waitress already.
UNIQUE = [
    ("If-None-Match", '"a"'),
    ("If-Match", "*"),
    ("If-Modified-Since", "Thu, 01 Jan 1970 00:00:00 GMT"),
    ("If-Unmodified-Since", "Thu, 01 Jan 2099 00:00:00 GMT"),
    ("If-Range", '"a"'),
    ("Authorization", "Bearer x"),
    ("Expect", "100-continue"),
    ("Content-Range", "bytes 0-1/2"),
]


@pytest.mark.parametrize(("name", "value"), UNIQUE, ids=[n for n, _ in UNIQUE])
@pytest.mark.parametrize(
    "second",
    ["{name}: {value}", "{lower}: other", "{upper}:", "{name}"],
    ids=["same", "other-case", "empty", "no-colon"],
)
def test_a_repeated_header_nginx_keeps_one_of_is_400(
    raw: RawClient, servers: tuple[Address, Address], name: str, value: str, second: str
) -> None:
    lines = [
        f"{name}: {value}",
        "Accept: */*",
        second.format(name=name, value=value, lower=name.lower(), upper=name.upper()),
    ]
    for target in (PAGE, LIVE, "/v1.39.0/nowhere"):
        got = both_raw(raw, servers, head_of(target, lines))
        assert (got.status, orjson.loads(got.body)) == (400, envelope(MALFORMED)), lines


def test_a_repeated_transfer_encoding_is_400(
    raw: RawClient, servers: tuple[Address, Address]
) -> None:
    lines = ["Transfer-Encoding: chunked", "Transfer-Encoding: chunked"]
    got = both_raw(raw, servers, head_of(PAGE, lines) + b"0\r\n\r\n")
    assert (got.status, orjson.loads(got.body)) == (400, envelope(MALFORMED))


@pytest.mark.parametrize(
    "lines",
    [
        ["Accept-Encoding: gzip", "Accept-Encoding: gzip"],
        ["Range: bytes=0-1", "Range: bytes=2-3"],
        ["Origin: https://a.example", "Origin: https://b.example"],
        ["Accept: */*", "accept: text/html"],
        ["User-Agent: a", "User-Agent: b"],
        ["X-Thing: a", "X-Thing: a"],
    ],
    ids=["accept-encoding", "range", "origin", "accept", "user-agent", "other"],
)
def test_other_repeated_headers_are_read(
    raw: RawClient, servers: tuple[Address, Address], sample_build: Path, lines: list[str]
) -> None:
    got = both_raw(raw, servers, head_of(PAGE, lines))
    assert got.status == 200


def test_the_first_refusal_in_the_head_is_answered(
    raw: RawClient, servers: tuple[Address, Address]
) -> None:
    """nginx reads a head line by line: a repeated header before a line past its buffer is
    400, after it 431."""
    long = f"X-Long: {'a' * 20_000}"
    twice = ['If-None-Match: "a"', 'If-None-Match: "b"']
    assert both_raw(raw, servers, head_of(PAGE, [*twice, long])).status == 400
    assert both_raw(raw, servers, head_of(PAGE, [long, *twice])).status == 431


# --- Accept-Encoding, as ngx_http_gzip_ok reads it -----------------------------------------------

# The first Accept-Encoding line; the first `gzip` in it (any case) that begins the value or
# follows a comma or a space; then spaces, and a comma, the end, or `;` with a `q=` of 0 or 1,
# a dot and at most three digits, not above 1 and not 0.
ACCEPT_ENCODING = [
    (["gzip"], True),
    (["GZIP"], True),
    (["gzip, deflate"], True),
    (["deflate,gzip"], True),
    (["br, gzip"], True),
    (["gzip;q=1"], True),
    (["gzip; q=0.5"], True),
    (["gzip;Q=0.001"], True),
    (["gzip;q=1.000"], True),
    (["gzip;"], True),
    (["gzip;q=1.5"], False),
    (["gzip;q=1.0001"], False),
    (["gzip;q=0"], False),
    (["gzip;q=0.000"], False),
    (["gzip;q=.5"], False),
    (["gzip;level=1"], False),
    (["gzip2, gzip"], False),
    (["x-gzip"], False),
    (["*"], False),
    (["identity", "gzip"], False),
    (["gzip", "identity"], True),
    (["gzip;q=0.5, gzip;q=0"], True),
]


@pytest.mark.parametrize(
    ("lines", "gzipped"), ACCEPT_ENCODING, ids=[" | ".join(v) for v, _ in ACCEPT_ENCODING]
)
def test_accept_encoding_is_read_as_nginx_gzip_filter_reads_it(
    raw: RawClient, servers: tuple[Address, Address], lines: list[str], gzipped: bool
) -> None:
    for target in (PAGE, LIVE):
        sent = [f"Accept-Encoding: {value}" for value in lines]
        got = both_raw(raw, servers, head_of(target, sent))
        assert got.status == 200
        assert ("content-encoding" in got.headers) == gzipped, (target, lines)


# --- a 304 keeps the connection ------------------------------------------------------------------


@pytest.mark.parametrize("version", ["1.1", "1.0"])
def test_a_304_keeps_the_connection_for_the_next_pipelined_request(
    nginx_socket: Path, serve_port: int, sample_build: Path, version: str
) -> None:
    """A 304, then a 200 and a 304 to a HEAD, sent in one write: each is answered (HTTP/1.0
    with `Connection: keep-alive`)."""
    page_etag = file_etag((sample_build / "site" / PAGE_FILE).stat())
    live_etag = body_etag(request(serve_port, LIVE).body)
    keep = ["Connection: keep-alive"] if version == "1.0" else []
    heads = [
        head_of(PAGE, [*keep, f"If-None-Match: {page_etag}"], version=version),
        head_of(LIVE, [*keep, f"If-None-Match: {live_etag}"], version=version),
        head_of(PAGE, keep, version=version),
        head_of(PAGE, [*keep, f"If-None-Match: {page_etag}"], "HEAD", version),
    ]
    answers = [pipelined(address, heads) for address in (nginx_socket, serve_port)]
    assert [compared(r) for r in answers[0]] == [compared(r) for r in answers[1]]
    assert [r.status for r in answers[1]] == [304, 304, 200, 304]


@pytest.mark.parametrize(
    ("version", "lines", "kept"),
    [
        ("1.1", [], True),
        ("1.1", ["Connection: Close"], False),
        ("1.1", ["Connection: keep-alive, close"], False),
        ("1.1", ["Connection: TE"], True),
        ("1.1", ["Connection: keep-alive", "Connection: close"], False),
        ("1.1", ["Connection: close", "Connection: keep-alive"], True),
        ("1.0", [], False),
        ("1.0", ["Connection: Keep-Alive"], True),
        ("1.0", ["Connection: keep-alive, TE"], True),
    ],
)
def test_connection_is_read_as_nginx_reads_it(
    nginx_socket: Path, serve_port: int, version: str, lines: list[str], kept: bool
) -> None:
    """nginx's `ngx_http_process_connection`: each line naming `close` anywhere in it (any
    case), or else `keep-alive`, decides, the last one winning; HTTP/1.1 keeps the connection
    unless told close, HTTP/1.0 only when told keep-alive."""
    heads = [head_of(PAGE, lines, version=version), head_of(PAGE, [], version=version)]
    for address in (nginx_socket, serve_port):
        assert len(pipelined(address, heads)) == (2 if kept else 1), address
