"""What waitress answers before the application, as nginx does, with the error envelope.

The request head is read as nginx reads it: a request line past nginx's buffer is 414, a header
line past it 431 (as well as a head past `max_request_header_size`); an HTTP version from 2 on is
505 and one below 1.0 malformed; an HTTP/1.1 request without `Host`, two `Host` headers, and
`Transfer-Encoding` beside `Content-Length` or in HTTP/1.0 (a request-smuggling shape) are
malformed (400). Every refusal is the error envelope with nginx's status and message.
"""

from __future__ import annotations

import re
import resource
from http import HTTPStatus

from waitress.channel import HTTPChannel  # type: ignore[import-untyped]
from waitress.parser import HTTPRequestParser, ParsingError  # type: ignore[import-untyped]
from waitress.task import ErrorTask  # type: ignore[import-untyped]
from waitress.utilities import (  # type: ignore[import-untyped]
    BadRequest,
    Error,
    RequestHeaderFieldsTooLarge,
)

from pipeline.api.responses import INTERNAL_ERROR, JSON, STATUS_MESSAGES, error_body
from pipeline.settings import HEADER_BUFFER

# The HTTP version at the end of a request line, as nginx reads it: a major version from 2 on is
# 505; 0.x, or a leading zero, is malformed; 1.1 and later need a Host header.
UNSUPPORTED_VERSION = re.compile(rb" HTTP/(?:[2-9]|1[0-9])[^ ]*")
MALFORMED_VERSION = re.compile(rb" HTTP/0[^ ]*")
HOST_REQUIRED = re.compile(rb" HTTP/1\.0*[1-9][0-9]*")

# Descriptors `pipeline serve` needs beside its connections: listeners, the wake-up pipe, the
# warehouse, a file per thread being read, standard streams, logging.
NOFILE_HEADROOM = 64


class TargetTooLong(BadRequest):  # type: ignore[misc]
    code = 414
    reason = "Request-URI Too Long"


class VersionNotSupported(Error):  # type: ignore[misc]
    code = 505
    reason = "HTTP Version Not Supported"


def _refusal(first_line: bytes, head: bytes) -> Error | None:
    """What nginx refuses in a request head before any location (None: nothing)."""
    if len(first_line) + 2 > HEADER_BUFFER:  # the line with its CRLF must fit nginx's buffer
        return TargetTooLong("request line longer than nginx's buffer")
    version = first_line[first_line.rfind(b" ") :] if b" " in first_line else b""
    if UNSUPPORTED_VERSION.fullmatch(version):
        return VersionNotSupported("HTTP version not supported")
    if MALFORMED_VERSION.fullmatch(version):
        return BadRequest("HTTP version below 1.0")
    names = [line.split(b":", 1)[0].lower() for line in head.split(b"\r\n")]
    hosts = names.count(b"host")
    if hosts > 1 or (hosts == 0 and HOST_REQUIRED.fullmatch(version)):
        return BadRequest("no Host header, or two")
    if b"transfer-encoding" in names and (b"content-length" in names or version == b" HTTP/1.0"):
        return BadRequest("Transfer-Encoding with Content-Length, or in HTTP/1.0")
    return None


class RequestParser(HTTPRequestParser):  # type: ignore[misc]
    """waitress's request parser, reading a request head as nginx does (see the module): a head
    past `max_request_header_size` is read (and dropped) to its end before the 431 (or 414) is
    sent. Closing the connection with the rest unread would reset it, and the client would lose
    the answer."""

    _refused: Error | None = None  # what nginx answers instead of waitress's 400
    _dropping = False  # reading an oversized head to its end
    _dropped = 0
    _tail = b""  # the last bytes seen, in case the blank line ending the head is split

    def received(self, data: bytes) -> int:
        if self._dropping:
            return self._drop(data)
        seen = self.header_plus + data
        consumed: int = super().received(data)
        if self._refused is not None:
            self.error = self._refused
        elif isinstance(self.error, RequestHeaderFieldsTooLarge):
            line_end = seen.find(b"\r\n")
            if (line_end if line_end >= 0 else len(seen)) + 2 > HEADER_BUFFER:
                self.error = TargetTooLong("request line longer than nginx's buffer")
            if b"\r\n\r\n" not in seen:
                self.completed, self._dropping, self._tail = False, True, seen[-3:]
        return consumed

    def _drop(self, data: bytes) -> int:
        seen = self._tail + data
        end = seen.find(b"\r\n\r\n")
        self._dropped += len(data)
        if end < 0 and self._dropped < 4 * self.adj.max_request_header_size:
            self._tail = seen[-3:]
            return len(data)
        self.completed = True  # the head ended (or goes on without end: answer and close)
        return len(data) if end < 0 else end + 4 - len(self._tail)

    def parse_header(self, header_plus: bytes) -> None:
        first_line, _, head = header_plus.partition(b"\r\n")
        self._refused = _refusal(first_line.rstrip(), head)
        if self._refused is not None:
            raise ParsingError(self._refused.body)
        super().parse_header(header_plus)
        lines = head.split(b"\r\n")  # the request line is the target's (414)
        if any(len(line) + 2 > HEADER_BUFFER for line in lines):
            self._refused = RequestHeaderFieldsTooLarge("a header line past nginx's buffer")
            raise ParsingError("header line too long")


class _ErrorTask(ErrorTask):  # type: ignore[misc]
    """A request waitress refuses (400, 413, 414, 431, 501, 505) or an application crash (500):
    the error envelope with nginx's status and message."""

    def execute(self) -> None:
        status = int(self.request.error.code)
        body = error_body([STATUS_MESSAGES.get(status, INTERNAL_ERROR)])
        self.status = f"{status} {HTTPStatus(status).phrase}"
        self.response_headers.append(("Content-Type", JSON))
        self.set_close_on_finish()
        self.content_length = len(body)
        self.write(body)


class Channel(HTTPChannel):  # type: ignore[misc]
    parser_class = RequestParser
    error_task_class = _ErrorTask


def raise_open_files_limit(connection_limit: int, threads: int) -> None:
    """Raise the process's open-files soft limit (RLIMIT_NOFILE) to the connections plus
    headroom, where it is lower: out of descriptors, waitress's accept loop spins. SystemExit
    with one line when the hard limit is below it."""
    needed = connection_limit + threads + NOFILE_HEADROOM
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= needed:
        return
    if hard != resource.RLIM_INFINITY and hard < needed:
        raise SystemExit(
            f"serve failed: serve.connection_limit {connection_limit} needs {needed} open files "
            f"and the hard limit (ulimit -Hn) is {hard}: raise it or lower connection_limit"
        )
    resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))
