"""Request heads read as nginx reads them, by `pipeline serve` and the generated nginx alike:
If-None-Match lists, repeated headers (400 for those nginx keeps one of), Accept-Encoding as
nginx's gzip filter reads it, and a 304 that keeps the connection. The expected answers come
from nginx's own code (`ngx_http_test_if_match`, the header table of `ngx_http_request.c`,
`ngx_http_gzip_ok`), and both servers must give them, over raw sockets."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import orjson
import pytest
from hypothesis import given, settings

from pipeline.api.http import body_etag, file_etag
from tests.support.heads import Generated, Kinds, RawClient, compared, head_of, heads, pipelined
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
    ("lines", "status"),
    [
        (["Accept-Encoding: gzip", "Accept-Encoding: gzip"], 200),
        (["Range: bytes=0-1", "Range: bytes=2-3"], 206),  # the first: bytes 0-1
        (["Origin: https://a.example", "Origin: https://b.example"], 200),
        (["Accept: */*", "accept: text/html"], 200),
        (["User-Agent: a", "User-Agent: b"], 200),
        (["X-Thing: a", "X-Thing: a"], 200),
    ],
    ids=["accept-encoding", "range", "origin", "accept", "user-agent", "other"],
)
def test_other_repeated_headers_are_read_by_their_first_line(
    raw: RawClient, servers: tuple[Address, Address], lines: list[str], status: int
) -> None:
    got = both_raw(raw, servers, head_of(PAGE, lines))
    assert got.status == status
    if status == 206:
        assert got.headers["content-range"].startswith("bytes 0-1/")


def test_the_first_refusal_in_the_head_is_answered(
    raw: RawClient, servers: tuple[Address, Address]
) -> None:
    """nginx reads a head line by line: a repeated header before a line past its buffer is
    400, after it 431."""
    long = f"X-Long: {'a' * 20_000}"
    twice = ['If-None-Match: "a"', 'If-None-Match: "b"']
    assert both_raw(raw, servers, head_of(PAGE, [*twice, long])).status == 400
    assert both_raw(raw, servers, head_of(PAGE, [long, *twice])).status == 431


@pytest.mark.parametrize(
    ("lines", "status"),
    [
        (["If-Match:"], 412),
        (["If-Unmodified-Since:"], 412),
        (["If-Match"], 412),
        (["If-Match:", "If-Unmodified-Since:"], 412),
        (["If-Match:", "If-Unmodified-Since: junk"], 200),
        (["If-Match: *"], 200),
        (['If-Match: "0-stale"'], 200),
        (["If-Unmodified-Since: Thu, 01 Jan 1970 00:00:00 GMT"], 200),
    ],
)
def test_an_empty_precondition_is_412_as_nginx_answers_it(
    raw: RawClient, servers: tuple[Address, Address], lines: list[str], status: int
) -> None:
    """nginx sends a request with a value in If-Match or If-Unmodified-Since to the upstream,
    which ignores them; its map cannot tell an empty one from none, and its filter refuses a
    file, or a kept answer, to an empty one. A 404 stays 404. The next request on the
    connection is answered, also after a live answer nginx had not kept yet."""
    fresh = f"{LIVE}&case={quote(repr(lines))}"  # a URL of its own: not in nginx's cache yet
    for target in (PAGE, LIVE, fresh):
        got = both_raw(raw, servers, head_of(target, lines))
        assert got.status == status, (target, lines)
        if status == 412:  # nginx's own page
            assert got.content_type == "text/html; charset=utf-8"
            assert b"<h1>412 Precondition Failed</h1>" in got.body
        assert both_raw(raw, servers, head_of(target, [])).status == 200
    assert both_raw(raw, servers, head_of("/v1.39.0/nowhere", lines)).status == 404


@pytest.mark.parametrize(
    ("lines", "status"),
    [
        (["X@Y: 1"], 200),  # a name nginx does not read: the line is ignored
        (["X(Y)"], 200),
        (['If-None-Match: "a"', 'If.None.Match: "b"'], 200),  # ignored: no second line
        (["X-A: a\x01b\x7f"], 200),  # a control byte in a value
        (["If-None-Match: ETAG\x01"], 200),
        (["X-A: a\x00b"], 400),  # but NUL
        (["X A: 1"], 400),  # a space in a name
        ([": 1"], 400),  # no name
        (["Content-Length: 0\t"], 400),  # a tab is part of the value: no number
        (["Content-Length:  0 "], 200),
    ],
    ids=[
        "at",
        "parens",
        "dots",
        "control",
        "control-etag",
        "nul",
        "space",
        "no-name",
        "length-tab",
        "length-spaces",
    ],
)
def test_a_header_line_nginx_ignores_or_refuses(
    raw: RawClient,
    servers: tuple[Address, Address],
    sample_build: Path,
    lines: list[str],
    status: int,
) -> None:
    """nginx's `ngx_http_parse_header_line`: a name holds letters, digits and `-`; a line whose
    name holds another printable byte is ignored (`ignore_invalid_headers`), a space or a
    control byte in it is 400; a value may hold any byte but NUL, CR and LF."""
    etag = file_etag((sample_build / "site" / PAGE_FILE).stat())
    sent = [line.replace("ETAG", etag) for line in lines]
    assert both_raw(raw, servers, head_of(PAGE, sent)).status == status


@pytest.mark.parametrize(
    ("host", "status"),
    [
        ("a/b", 400),  # a path separator
        ("", 400),
        (".", 400),
        ("a..b", 400),
        ("a b", 400),
        ("a\x01", 400),
        ("[::1]:80", 200),
        (".a.", 200),
        ("a\\b", 200),
        ("A.Example:8080", 200),
    ],
)
def test_a_host_is_read_as_nginx_validates_it(
    raw: RawClient, servers: tuple[Address, Address], host: str, status: int
) -> None:
    """nginx's `ngx_http_validate_host`: no `/`, no space or control byte, no two dots in a row,
    not empty once a trailing dot and the port are dropped."""
    head = f"GET {PAGE} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode("latin-1")
    assert both_raw(raw, servers, head).status == status


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


# --- generated heads, to both servers ------------------------------------------------------------


@pytest.fixture(scope="module")
def kinds(sample_build: Path) -> Kinds:
    return Kinds.of(sample_build)


@settings(max_examples=100, deadline=None)
@given(generated=heads())
def test_both_servers_read_generated_heads_alike(
    raw: RawClient,
    nginx_socket: Path,
    serve_port: int,
    kinds: Kinds,
    generated: Generated,
) -> None:
    """GET and HEAD of pages, live answers, errors and bulk files, with If-None-Match lists,
    Accept-Encoding variants, conditional and other headers, some repeated: the same status,
    body and the contract's headers from nginx and from `pipeline serve`."""
    both_raw(raw, (nginx_socket, serve_port), kinds.head(raw, serve_port, generated)[1])
