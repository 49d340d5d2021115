"""Request heads sent as the bytes given, over real sockets: one after another on a connection
kept open to each server while the server keeps it (`RawClient`), or several sent at once, as a
pipelining client sends them (`pipelined`); what every server answers alike (`compared`); the
heads the property tests generate (`heads`), for the sample's URLs of each kind (`Kinds`)."""

from __future__ import annotations

import gzip
import http.client
import io
import re
import socket
from pathlib import Path

from hypothesis import strategies as st

from tests.support.servers import Address, Reply, connection
from tests.support.targets import bulk_targets, materialised_targets

# The headers every server sends alike (docs/serving.md) (and `Allow`, on a 405).
COMPARED = (
    "content-type",
    "content-encoding",
    "etag",
    "cache-control",
    "expires",
    "vary",
    "accept-ranges",
    "content-range",
    "allow",
)


class _Reader(io.BufferedReader):
    """A connection's one buffered reader (answers may arrive together), which the answer
    read from it does not close."""

    def close(self) -> None:
        pass

    def shut(self) -> None:
        super().close()


class _Kept:
    """A socket and the reader of its answers."""

    def __init__(self, address: Address, timeout: float) -> None:
        conn = connection(address, timeout)
        conn.connect()
        assert conn.sock is not None
        self.sock: socket.socket = conn.sock
        self.reader = _Reader(self.sock.makefile("rb", buffering=0))

    def makefile(self, mode: str, *args: object) -> _Reader:  # what HTTPResponse reads
        return self.reader

    def answer(self, method: str) -> tuple[Reply, bool]:
        """The next answer on the connection (an interim 100 Continue skipped), and whether the
        server closes the connection after it."""
        response = http.client.HTTPResponse(self, method=method)  # type: ignore[arg-type]
        response.begin()
        body = response.read()
        headers = {k.lower(): v for k, v in response.getheaders()}
        reply = Reply(response.status, body, headers.get("content-type", ""), headers)
        return reply, bool(response.will_close)

    def close(self) -> None:
        self.reader.shut()
        self.sock.close()


def _method(head: bytes) -> str:
    return head.split(b" ", 1)[0].decode("latin-1")


class RawClient:
    """Heads sent as bytes, each on the connection kept to its address; one the server closed
    (as its answer said) is opened again for the next. For one thread."""

    def __init__(self, timeout: float = 30) -> None:
        self.timeout = timeout
        self._kept: dict[Address, _Kept] = {}

    def send(self, address: Address, head: bytes) -> Reply:
        kept = self._kept.pop(address, None)
        if kept is not None:
            try:
                return self._exchange(address, kept, head)
            except ConnectionError:  # closed by the server while idle: once more, on a new one
                pass
        return self._exchange(address, _Kept(address, self.timeout), head)

    def _exchange(self, address: Address, kept: _Kept, head: bytes) -> Reply:
        try:
            kept.sock.sendall(head)
            reply, closing = kept.answer(_method(head))
        except BaseException:
            kept.close()
            raise
        if closing:
            kept.close()
        else:
            self._kept[address] = kept
        return reply

    def close(self) -> None:
        for kept in self._kept.values():
            kept.close()
        self._kept.clear()


def pipelined(address: Address, heads: list[bytes], timeout: float = 30) -> list[Reply]:
    """`heads` sent in one write on a new connection, and the answers read in turn, up to the
    one after which the server closes the connection: an exception (a timeout, the connection
    reset) where one is missing before it."""
    kept = _Kept(address, timeout)
    answers: list[Reply] = []
    try:
        kept.sock.sendall(b"".join(heads))
        for head in heads:
            reply, closing = kept.answer(_method(head))
            answers.append(reply)
            if closing:
                break
        return answers
    finally:
        kept.close()


def compared(reply: Reply) -> tuple[int, bytes, dict[str, str]]:
    """What every server answers alike: the status, the body decompressed (the encoding is a
    compared header) and the compared headers."""
    body = reply.body
    if reply.headers.get("content-encoding") == "gzip" and body:
        body = gzip.decompress(body)
    return reply.status, body, {k: v for k, v in reply.headers.items() if k in COMPARED}


def head_of(target: str, lines: list[str], method: str = "GET", version: str = "1.1") -> bytes:
    """A request head of these header lines (after `Host: a`, unless they have a Host), as
    bytes."""
    host = [] if any(line.lower().startswith("host") for line in lines) else ["Host: a"]
    text = f"{method} {target} HTTP/{version}\r\n" + "".join(f"{h}\r\n" for h in host + lines)
    return (text + "\r\n").encode("latin-1")


# --- the heads the property tests generate -------------------------------------------------------

# Live answers (200) and errors: nginx's own 404, and the upstream's 404 and 400.
LIVE_TARGETS = [
    "/v1.39.0/stores/card-cellar/inventory/products?limit=3&sort=name%20desc",
    "/v1.39.0/stores/tiny7/inventory/products?limit=2",
    "/v1.39.0/catalog/categories?sortOrder=categoryId",
]
ERRORS = [
    "/v1.39.0/nowhere",
    "/v1.39.0/stores/nobody/inventory/products",
    "/v1.39.0/stores/tiny7/inventory/products?offset=abc",
]
# An If-None-Match element: ETAG stands for the URL's ETag (of its plain 200).
ELEMENTS = ["ETAG", "W/ETAG", "*", '"0-stale"', 'W/"0-stale"', "junk", "", '"ETAG"']
SEPARATORS = [",", ", ", " , ", ",,", ", ,", "\t,", " "]
CODINGS = ["gzip", "GZIP", "x-gzip", "gzip2", "deflate", "br", "identity", "*"]
QUALITIES = ["", ";q=0", ";q=1", ";q=0.5", ";q=1.5", "; q=0.001", ";q=.5", ";level=1", ";Q=1"]
DATES = ["Thu, 01 Jan 1970 00:00:00 GMT", "Fri, 01 Jan 2100 00:00:00 GMT", "junk", ""]
# Lines nginx ignores (a name with a byte it does not read), and values with control bytes.
IGNORED = ["If_None_Match: *", "If-None-Match@: *", "Accept(Encoding): gzip", "X-A: a\x01\x7f"]
# Left out: a Range beside an If-Match or If-Unmodified-Since with a value. nginx sends such a
# request to `pipeline serve` without its Accept-Encoding, which then answers the range (206),
# where `pipeline serve` asked directly compresses the whole body (200).
PRECONDITION = re.compile(r"(?i)if-(?:match|unmodified-since): *[^ ]")
# Each header: the values a line may have.
HEADERS: dict[str, st.SearchStrategy[str]] = {
    "If-Modified-Since": st.sampled_from(DATES),
    "If-Unmodified-Since": st.sampled_from(DATES),
    "If-Match": st.sampled_from(["*", "ETAG", '"0-stale"']),
    "If-Range": st.sampled_from(["ETAG", DATES[0]]),
    "Authorization": st.sampled_from(["Bearer t0k3n", "Basic eDp5"]),
    "Expect": st.sampled_from(["100-continue"]),
    "Content-Range": st.sampled_from(["bytes 0-1/2"]),
    "Range": st.sampled_from(["bytes=0-9", "bytes=5-", "bytes=-5", "bytes=0-0,2-3", "items=0-1"]),
    "Origin": st.sampled_from(["https://shop.example", "null"]),
    "Via": st.sampled_from(["1.1 cdn.example"]),
    "Host": st.sampled_from(["b", "a..b", ".b.", "b/c"]),  # in place of the head's `Host: a`
}
# How many lines of a header, where not 0, 1 or 2 (`times`).
TIMES = {
    "If-None-Match": st.sampled_from([0, 1, 1, 2]),
    "Host": st.sampled_from([0, 0, 0, 0, 0, 1, 1, 2]),
}


@st.composite
def none_match(draw: st.DrawFn) -> str:
    elements = draw(st.lists(st.sampled_from(ELEMENTS), min_size=1, max_size=4))
    value = elements[0]
    for element in elements[1:]:
        value += draw(st.sampled_from(SEPARATORS)) + element
    pad = st.sampled_from(["", "", " ", "\t"])
    return draw(pad) + value + draw(pad)


@st.composite
def accept_encoding(draw: st.DrawFn) -> str:
    codings = draw(
        st.lists(
            st.tuples(st.sampled_from(CODINGS), st.sampled_from(QUALITIES)), min_size=1, max_size=3
        )
    )
    separator = draw(st.sampled_from([",", ", "]))
    return separator.join(name + quality for name, quality in codings)


# A method, HTTP version, kind of URL, which of them, and header lines.
Generated = tuple[str, str, str, int, list[str]]


@st.composite
def heads(draw: st.DrawFn) -> Generated:
    """A method, an HTTP version, a kind of URL and which of them, and the head's header lines
    (ETAG in a value stands for the URL's ETag), in any order, each name in any case."""
    method = draw(st.sampled_from(["GET", "HEAD"]))
    kind = draw(st.sampled_from(["page", "page", "live", "error", "bulk"]))
    lines: list[str] = []
    times = st.sampled_from([0, 0, 0, 1, 1, 2])
    for name, values in [
        ("If-None-Match", none_match()),
        ("Accept-Encoding", accept_encoding()),
        *HEADERS.items(),
    ]:
        for _ in range(draw(TIMES.get(name, times))):
            spelled = draw(st.sampled_from([name, name.lower(), name.upper()]))
            # a value, an empty one, or a line with no colon (a header with an empty value)
            form = draw(st.sampled_from(["{}: {}"] * 6 + ["{}:", "{}"]))
            lines.append(form.format(spelled, draw(values)))
    lines += draw(st.lists(st.sampled_from(IGNORED), max_size=2))
    if any(PRECONDITION.match(line) for line in lines):  # see PRECONDITION
        lines = [line for line in lines if not line.lower().startswith("range")]
    version = draw(st.sampled_from(["1.1", "1.1", "1.1", "1.0"]))
    return method, version, kind, draw(st.integers(0, 10**6)), draw(st.permutations(lines))


class Kinds(dict[str, list[str]]):
    """The URLs of each kind of the sample's build, and the ETags asked of them (a short repr:
    hypothesis prints the fixtures of a failure)."""

    etags: dict[tuple[Address, str], str]

    @classmethod
    def of(cls, output: Path) -> Kinds:
        kinds = cls(
            page=materialised_targets(output),
            live=LIVE_TARGETS,
            error=ERRORS,
            bulk=bulk_targets(output),
        )
        kinds.etags = {}
        return kinds

    def __repr__(self) -> str:
        return f"Kinds({', '.join(f'{k}: {len(v)}' for k, v in self.items())})"

    def head(self, raw: RawClient, address: Address, generated: Generated) -> tuple[str, bytes]:
        """The ETag `address` gives a plain GET of a generated request's URL (asked once), and
        the request's head, ETAG in it that ETag."""
        method, version, kind, index, lines = generated
        target = self[kind][index % len(self[kind])]
        if (address, target) not in self.etags:
            etag = raw.send(address, head_of(target, [])).headers.get("etag", '"none"')
            self.etags[address, target] = etag
        etag = self.etags[address, target]
        sent = [line.replace("ETAG", etag) for line in lines]
        return etag, head_of(target, sent, method, version)
