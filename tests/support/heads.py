"""Request heads sent as the bytes given, over real sockets: one after another on a connection
kept open to each server while the server keeps it (`RawClient`), or several sent at once, as a
pipelining client sends them (`pipelined`)."""

from __future__ import annotations

import gzip
import http.client
import io
import socket

from tests.support.servers import Address, Reply, connection

# The headers DESIGN.md §4 says every server sends alike (and `Allow`, on a 405).
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
