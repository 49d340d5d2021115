"""Text written into an nginx configuration, by nginx's grammar: every token double-quoted and
escaped. Text nginx cannot hold literally (a `$`, a control character) is refused by name."""

from __future__ import annotations

import re

from pipeline.errors import BuildError

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def quoted(text: str) -> str:
    """`text` as one double-quoted token (a regular expression, a value naming variables)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def literal(text: str, what: str) -> str:
    """`text` as a token nginx reads as written; BuildError naming `what` where it cannot be."""
    if "$" in text or _CONTROL.search(text):
        raise BuildError(
            f"{what} {text!r}: nginx cannot take a '$' or a control character literally"
        )
    return quoted(text)


# nginx hashes a map's string keys into buckets of a CPU cache line (`map_hash_bucket_size`, 64
# bytes on x86-64) and refuses the whole configuration where one key fits in none: a key of over
# 46 bytes. Such a key is written as a regular expression that matches it alone, in any case as
# the hash does; nginx tries those after the hash. Raising `map_hash_bucket_size` instead would
# only work above every other `map` of the `http` block, the operator's own included.
HASHED_KEY_BYTES = 46


def map_key(text: str) -> str:
    """`text` as a map's key matched as a string (in any case), never a parameter or an
    expression: over `HASHED_KEY_BYTES`, as a regular expression that matches it alone."""
    if len(text.encode()) > HASHED_KEY_BYTES:
        return quoted(f"~*^{re.escape(text)}\\z")
    return quoted("\\" + text)


def included(path: str) -> str:
    """The path of an `include`, which nginx reads as a glob: BuildError where it is one."""
    if re.search(r"[*?\[]", path):
        raise BuildError(
            f"the file to include {path!r}: nginx would read '*', '?' or '[' as a glob"
        )
    return literal(path, "the file to include")


def regex_location(pattern: str) -> str:
    """The opening line of a location matching the regular expression `pattern`."""
    return f"    location ~ {quoted(pattern)} {{"
