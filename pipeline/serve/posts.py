"""The answers to a POST (`api.urls.POST_PATHS`), by the name of its path: nginx passes these
requests to `pipeline serve` with their bodies, and any other POST is 405 on both."""

from __future__ import annotations

import re
from collections.abc import Callable
from urllib.parse import unquote

import duckdb

from pipeline.api import token
from pipeline.api.responses import ApiError, Response
from pipeline.api.urls import POST_PATHS
from pipeline.serve.routes import BAD_ESCAPE, normalize_path, origin_form

# What answers each POST path: its request body, and what opens the warehouse where it needs it.
Answer = Callable[[bytes, Callable[[], duckdb.DuckDBPyConnection]], Response]
ANSWERS: dict[str, Answer] = {"token": lambda body, _: token.answer(body)}
_PATTERNS = {name: re.compile(pattern) for name, pattern in POST_PATHS.items()}
assert set(ANSWERS) == set(POST_PATHS), "every POST path has its answer"


def match(target: str) -> str | None:
    """The name of the POST path a request target (as the request line sends it) names, read
    as nginx reads it (percent-decoded, slashes merged, a trailing slash dropped); None for
    any other target, and for one nginx would refuse."""
    try:
        path = origin_form(target).partition("#")[0].partition("?")[0]
        if BAD_ESCAPE.search(path):
            return None
        path = normalize_path(unquote(path))
    except ApiError:
        return None
    path = path.rstrip("/") if len(path) > 1 else path
    return next((name for name, p in _PATTERNS.items() if p.fullmatch(path)), None)
