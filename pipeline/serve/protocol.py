"""What waitress answers before the application, as nginx does, with the error envelope.
(docs/serving.md, "The request head, read as nginx reads it")"""

from __future__ import annotations

import re
import resource
from http import HTTPStatus

from waitress.channel import HTTPChannel  # type: ignore[import-untyped]
from waitress.parser import HTTPRequestParser, ParsingError  # type: ignore[import-untyped]
from waitress.task import ErrorTask, WSGITask  # type: ignore[import-untyped]
from waitress.utilities import (  # type: ignore[import-untyped]
    BadRequest,
    Error,
    RequestHeaderFieldsTooLarge,
)

from pipeline.api.http import CORS, NO_STORE
from pipeline.api.responses import INTERNAL_ERROR, JSON, STATUS_MESSAGES, error_body
from pipeline.serve.fields import as_nginx_reads, bad_line, for_waitress
from pipeline.settings import FIRST_HEADER_BUFFER, HEADER_BUFFER

# The HTTP version at the end of a request line, as nginx reads it: a major version from 2 on is
# 505; 0.x, or a leading zero, is malformed; 1.1 and later need a Host header.
UNSUPPORTED_VERSION = re.compile(rb" HTTP/(?:[2-9]|1[0-9])[^ ]*")
MALFORMED_VERSION = re.compile(rb" HTTP/0[^ ]*")
HOST_REQUIRED = re.compile(rb" HTTP/1\.0*[1-9][0-9]*")
# A line's end and the head's (a blank line), as nginx reads them: CRLF or a bare LF.
LINE_END = re.compile(rb"\r?\n")
HEAD_END = re.compile(rb"\n\r?\n")
# What may begin a request as nginx reads it: blank lines, then a method (A-Z, `_`, `-`) and a
# space; any other byte is 400 there and then.
REQUEST_START = re.compile(rb"[\r\n]*(?:[A-Z_-]+(?: |\Z)|\Z)")
CONTROL = re.compile(rb"[\x00-\x1f\x7f]")
# nginx refuses a request of more header lines (a count of its own, not a setting).
MAX_HEADER_LINES = 1000

# Descriptors `pipeline serve` needs beside its connections: listeners, the wake-up pipe, the
# warehouse, a file per thread being read, standard streams, logging.
NOFILE_HEADROOM = 64


class TargetTooLong(BadRequest):  # type: ignore[misc]
    code = 414
    reason = "Request-URI Too Long"


class VersionNotSupported(Error):  # type: ignore[misc]
    code = 505
    reason = "HTTP Version Not Supported"


def _refusal(first_line: bytes, head: bytes, sent: bytes, large_buffers: int) -> Error | None:
    """What nginx refuses in a request head before any location (None: nothing), in the order
    nginx reads it: the request line, then the header lines in turn (the buffers they need,
    `sent`: the head as sent, b"" for none; a line nginx refuses: `fields.bad_line`), then the
    headers read."""
    if len(first_line) + 2 > HEADER_BUFFER:  # the line with its CRLF must fit nginx's buffer
        return TargetTooLong("request line longer than nginx's buffer")
    if CONTROL.search(first_line):
        return BadRequest("a control character in the request line")
    version = first_line[first_line.rfind(b" ") :] if b" " in first_line else b""
    if UNSUPPORTED_VERSION.fullmatch(version):
        return VersionNotSupported("HTTP version not supported")
    if MALFORMED_VERSION.fullmatch(version):
        return BadRequest("HTTP version below 1.0")
    lines = head.split(b"\r\n")
    bad = bad_line(lines)
    if sent:
        read = None  # nginx reads the whole head, or up to the line it refuses
        if bad is not None:
            ends = [found.end() for found in LINE_END.finditer(sent)]
            number, _, whole = bad  # the request line is line end 0
            read = ends[number + 1] if whole else ends[number] + 1
        overflow = _overflow(sent, large_buffers, read)
        if overflow is not None:
            return overflow
    if bad is not None:
        return bad[1]
    names = [line.split(b":", 1)[0].lower() for line in lines]
    if b"host" not in names and HOST_REQUIRED.fullmatch(version):
        return BadRequest("no Host header")
    if b"content-length" in names:  # nginx's ngx_atoof: digits only (a tab is in the value)
        length = lines[names.index(b"content-length")].partition(b":")[2].strip(b" ")
        if not (length.isascii() and length.isdigit()):
            return BadRequest("a Content-Length that is not a number")
    if b"transfer-encoding" in names and (b"content-length" in names or version == b" HTTP/1.0"):
        return BadRequest("Transfer-Encoding with Content-Length, or in HTTP/1.0")
    return None


def head_limit(max_request_header_size: int) -> int:
    """waitress's `max_request_header_size` for the `serve` setting: one byte past what
    nginx's buffers can hold (waitress refuses a size equal to its limit); within it, whether
    a head fits is `_overflow`'s to say."""
    return FIRST_HEADER_BUFFER + max_request_header_size + 1


def _overflow(head: bytes, large_buffers: int, read: int | None = None) -> Error | None:
    """Whether nginx's buffers hold this head (its bytes as sent, through the blank line), or
    its first `read` bytes, where nginx stops reading it: read into a first buffer, then into
    large ones, each started with the line the last one cut; a line that outgrows a large
    buffer, or a head that needs one more than there are, is 431 (414 for the request line),
    and so are more than MAX_HEADER_LINES header lines."""
    ends = [found.end() for found in LINE_END.finditer(head)]
    if read is not None:  # the last "line" is the part of one read when nginx stops
        ends = [end for end in ends if end < read] + [read]
    if len(ends) - 2 > MAX_HEADER_LINES:  # the request line and the blank line are no headers
        return RequestHeaderFieldsTooLarge("more header lines than nginx reads")
    start, buffer_end, busy = 0, FIRST_HEADER_BUFFER, 0
    for number, end in enumerate(ends):
        while end > buffer_end:
            if buffer_end - start >= HEADER_BUFFER or busy == large_buffers:
                if number == 0:
                    return TargetTooLong("request line longer than nginx's buffer")
                return RequestHeaderFieldsTooLarge("a head nginx's buffers cannot hold")
            busy, buffer_end = busy + 1, start + HEADER_BUFFER
        start = end
    return None


class RequestParser(HTTPRequestParser):  # type: ignore[misc]
    """waitress's request parser, reading a request head as nginx does: a head
    past what nginx's buffers hold is read (and dropped) to its end before the 431 (or 414) is
    sent. Closing the connection with the rest unread would reset it, and the client would lose
    the answer."""

    header_plus: bytes = b""  # waitress's: the head as received so far
    completed: bool = False  # waitress's: the request (or the refusal) is ready
    _refused: Error | None = None  # what nginx answers instead of waitress's 400
    _dropping = False  # reading an oversized head to its end
    _dropped = 0
    _tail = b""  # the last bytes seen, in case the blank line ending the head is split
    _sent_head = b""  # the head as the client sent it (its line ends), for `_overflow`

    def received(self, data: bytes) -> int:
        if self._dropping:
            return self._drop(data)
        if self.completed or self.body_rcv is not None:
            return int(super().received(data))
        seen = self.header_plus + data
        if not REQUEST_START.match(seen):  # no request line can begin so: answer now
            self.header_plus = b""
            HTTPRequestParser.parse_header(self, b"GET / HTTP/1.1\r\n")
            self.error, self.completed = BadRequest("not a request line"), True
            return len(data)
        end = HEAD_END.search(seen)
        if end is None:
            consumed = int(super().received(data))
        else:  # the head, its line ends made CRLF for waitress
            self._sent_head = seen[: end.end()].lstrip()
            taken = end.end() - len(self.header_plus)
            self.header_plus = b""
            super().received(LINE_END.sub(b"\r\n", seen[: end.end()]))
            consumed = taken
        if self._refused is not None:
            self.error = self._refused
        elif isinstance(self.error, RequestHeaderFieldsTooLarge):
            line_end = LINE_END.search(seen)
            if (line_end.start() if line_end else len(seen)) + 2 > HEADER_BUFFER:
                self.error = TargetTooLong("request line longer than nginx's buffer")
            if end is None:
                self.completed, self._dropping, self._tail = False, True, seen[-3:]
        return consumed

    def _drop(self, data: bytes) -> int:
        seen = self._tail + data
        end = HEAD_END.search(seen)
        self._dropped += len(data)
        if end is None and self._dropped < 4 * self.adj.max_request_header_size:
            self._tail = seen[-3:]
            return len(data)
        self.completed = True  # the head ended (or goes on without end: answer and close)
        return len(data) if end is None else end.end() - len(self._tail)

    def parse_header(self, header_plus: bytes) -> None:
        first_line, _, head = header_plus.partition(b"\r\n")
        # The head as sent, when this is the whole head (not waitress's stand-in for a head
        # past its limit, which has no blank line).
        sent = (self._sent_head or header_plus) if header_plus.endswith(b"\r\n\r\n") else b""
        large_buffers = (self.adj.max_request_header_size - head_limit(0)) // HEADER_BUFFER
        self._refused = _refusal(first_line.rstrip(), head, sent, large_buffers)
        if self._refused is not None:
            raise ParsingError(self._refused.body)
        # nginx reads a line with no colon as a header with an empty value
        lines = [line if b":" in line or not line else line + b":" for line in head.split(b"\r\n")]
        super().parse_header(first_line + b"\r\n" + b"\r\n".join(for_waitress(lines)))
        if self.body_rcv is None:  # nothing to wait for: no 100 Continue, the answer
            self.expect_continue = False
        self.headers.update(as_nginx_reads(lines))


class _Task(WSGITask):  # type: ignore[misc]
    """waitress's task, but an answer that has no body by its status (304, 204) keeps the
    connection, as nginx's: waitress closes any answer without a length, and sends none on
    these. The client's `Connection` decides (HTTP/1.0: kept only with `keep-alive`)."""

    _bodiless = False  # building such an answer's head: no close for its missing length

    def build_response_header(self) -> bytes:
        asked = self.request.headers.get("CONNECTION", "").lower()
        kept = asked == "keep-alive" if self.version == "1.0" else asked != "close"
        self._bodiless = not self.has_body and kept and not self.close_on_finish
        if self._bodiless and self.version == "1.0":
            self.response_headers.append(("Connection", "Keep-Alive"))
        try:
            return bytes(super().build_response_header())
        finally:
            self._bodiless = False

    def set_close_on_finish(self) -> None:
        if not self._bodiless:
            super().set_close_on_finish()


class _ErrorTask(ErrorTask):  # type: ignore[misc]
    """A request waitress refuses (400, 413, 414, 431, 501, 505) or an application crash (500):
    the error envelope with nginx's status and message, and its headers (`serve.headers`)."""

    def execute(self) -> None:
        self.version = "1.1"  # nginx's status line, whatever the request's version
        status = int(self.request.error.code)
        body = error_body([STATUS_MESSAGES.get(status, INTERNAL_ERROR)])
        self.status = f"{status} {HTTPStatus(status).phrase}"
        self.response_headers.append(("Content-Type", JSON))
        self.response_headers += [("Cache-Control", NO_STORE), *CORS]
        self.set_close_on_finish()
        self.content_length = len(body)
        self.write(body)


class Channel(HTTPChannel):  # type: ignore[misc]
    parser_class = RequestParser
    task_class = _Task
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
