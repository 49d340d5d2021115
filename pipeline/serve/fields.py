"""A request's header lines as nginx reads them: the headers it refuses a second line of, and
the value of each header it reads. (docs/serving.md, "The request head, read as nginx reads
it")"""

from __future__ import annotations

import re

from waitress.utilities import BadRequest, Error  # type: ignore[import-untyped]

# A header name as nginx reads it (`ngx_http_parse_header_line`): letters, digits and `-`. A
# line whose name holds another printable byte (`_` too: `underscores_in_headers off`) is
# ignored (`ignore_invalid_headers`); a space or a control byte in it, or no name, is 400, as
# waitress refuses it too.
NAME = re.compile(rb"[A-Za-z0-9-]+")
REFUSED_IN_NAME = re.compile(rb"[\x00-\x20\x7f]")
# The bytes nginx takes in a value and waitress refuses: control bytes but NUL, tab, CR, LF.
CONTROL_IN_VALUE = re.compile(rb"[\x01-\x08\x0b\x0c\x0e-\x1f\x7f]")

# The headers nginx keeps one line of, and refuses a second of with 400 (the handlers
# `ngx_http_process_host` and `ngx_http_process_unique_header_line` in the header table of
# nginx's `ngx_http_request.c`), names in any case. Of the others, nginx reads the first line.
UNIQUE_HEADERS = frozenset(
    {
        b"host",
        b"if-modified-since",
        b"if-unmodified-since",
        b"if-match",
        b"if-none-match",
        b"content-length",
        b"content-range",
        b"if-range",
        b"transfer-encoding",
        b"expect",
        b"authorization",
    }
)
# The headers nginx reads every line of (`ngx_http_process_multi_header_lines`), as waitress
# names them: waitress's value, the lines joined, is kept.
MULTI_HEADERS = frozenset({"COOKIE", "X_FORWARDED_FOR"})


def ignored(line: bytes) -> bool:
    """Whether nginx ignores this header line: its name holds a byte nginx does not read."""
    name = line.partition(b":")[0]
    return bool(name) and not NAME.fullmatch(name) and not REFUSED_IN_NAME.search(name)


def for_waitress(lines: list[bytes]) -> list[bytes]:
    """The header lines nginx reads, for waitress to parse: those nginx ignores dropped, a
    control byte nginx takes in a value made `?` (the values nginx reads are `as_nginx_reads`)."""
    return [CONTROL_IN_VALUE.sub(b"?", line) for line in lines if not ignored(line)]


def bad_line(lines: list[bytes]) -> tuple[int, Error, bool] | None:
    """The first header line nginx refuses, its error, and whether nginx reads it whole before
    refusing it (a second line of a header it keeps one of) or refuses it at its first byte (a
    line folded onto the last, obs-fold); None: none."""
    seen: set[bytes] = set()
    for number, line in enumerate(lines):
        if line.startswith((b" ", b"\t")):
            return number, BadRequest("a header line folded onto the last (obs-fold)"), False
        if ignored(line):
            continue
        name, _, value = line.partition(b":")
        name = name.lower()
        if name in UNIQUE_HEADERS:
            if name in seen:
                return number, BadRequest(f"a second {name.decode('latin-1')} header"), True
            seen.add(name)
        if name == b"host" and not valid_host(value.strip(b" ")):
            return number, BadRequest("an invalid Host header"), True
    return None


def valid_host(host: bytes) -> bool:
    """Whether nginx takes this Host (`ngx_http_validate_host`): no `/`, space or control byte,
    no two dots in a row, and something left once the port (after the first `:`, or after
    `]` of a literal begun with `[`) and a trailing dot are dropped."""
    dot, length, state = -2, len(host), "usual"
    for position, byte in enumerate(host):
        if byte == ord("."):
            if dot == position - 1:
                return False
            dot = position
        elif byte == ord(":"):
            if state == "usual":
                length, state = position, "rest"
        elif byte == ord("["):
            if position == 0:
                state = "literal"
        elif byte == ord("]"):
            if state == "literal":
                length, state = position + 1, "rest"
        elif byte == ord("/") or byte <= 0x20 or byte == 0x7F:
            return False
    if dot == length - 1:
        length -= 1
    return length > 0


def as_nginx_reads(lines: list[bytes]) -> dict[str, str]:
    """The headers' values as nginx reads them (the request's WSGI environ), named as waitress
    names them: a header's first line, its value trimmed of spaces but not of tabs (waitress
    joins the lines and trims both), but for those nginx reads every line of (MULTI_HEADERS);
    `Connection` as close, keep-alive or nothing: the last line naming one of them, anywhere
    in it (`ngx_http_process_connection`). waitress closes the connection by it."""
    values: dict[str, str] = {}
    connection = ""
    for line in lines:
        if ignored(line):
            continue
        name, _, value = line.partition(b":")
        key = name.upper().replace(b"-", b"_").decode("latin-1")
        if not name or b"_" in name or key in MULTI_HEADERS:  # waitress drops a name with `_`
            continue
        if key == "CONNECTION":
            lowered = value.lower()
            named = (
                "close" if b"close" in lowered else "keep-alive" if b"keep-alive" in lowered else ""
            )
            connection = named or connection
        values.setdefault(key, value.strip(b" ").decode("latin-1"))
    if "CONNECTION" in values:
        values["CONNECTION"] = connection
    return values
