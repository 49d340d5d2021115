"""The answers to a POST (`api.urls.POST_PATHS`), by the name of its path: nginx passes these
requests to `pipeline serve` with their bodies, and any other POST is 405 on both."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import unquote

import duckdb

from pipeline.api import token
from pipeline.api.responses import ApiError, Response
from pipeline.api.search import POST_OPERATIONS
from pipeline.api.urls import POST_PATHS
from pipeline.serve import search
from pipeline.serve.cache import AnswerCache
from pipeline.serve.routes import BAD_ESCAPE, normalize_path, origin_form


@dataclass(frozen=True)
class Post:
    """A POST to one of the POST paths: its path's name and match (its groups: the path's
    parameters), its query string, and its body (read whole, within the body limit)."""

    name: str
    path: re.Match[str]
    query: str
    body: bytes


# What answers each POST path: the request, what opens the warehouse where it needs it, and
# the release's answers kept whole (a store's search cuts its page from its kept products).
Warehouse = Callable[[], duckdb.DuckDBPyConnection]
Answer = Callable[[Post, Warehouse, AnswerCache | None], Response]
ANSWERS: dict[str, Answer] = {
    "token": lambda post, _, __: token.answer(post.body),
    **{
        op.name: functools.partial(search.answer, op)
        for op in POST_OPERATIONS  # the searches (docs/contract.md §12)
    },
}
_PATTERNS = {name: re.compile(pattern) for name, pattern in POST_PATHS.items()}
assert set(ANSWERS) == set(POST_PATHS), "every POST path has its answer"


def match(target: str) -> tuple[str, re.Match[str], str] | None:
    """The POST path a request target (as the request line sends it) names: its name, its
    match and the query string; the path read as nginx reads it (percent-decoded, slashes
    merged, a trailing slash dropped). None for any other target, and for one nginx would
    refuse."""
    try:
        path, _, query = origin_form(target).partition("#")[0].partition("?")
        if BAD_ESCAPE.search(path):
            return None
        path = normalize_path(unquote(path))
    except ApiError:
        return None
    path = path.rstrip("/") if len(path) > 1 else path
    for name, pattern in _PATTERNS.items():
        found = pattern.fullmatch(path)
        if found:
            return name, found, query
    return None


def answer(
    named: tuple[str, re.Match[str], str],
    body: bytes,
    warehouse: Warehouse,
    cache: AnswerCache | None = None,
) -> Response:
    """The answer to a POST that `match` named, with its body."""
    name, path, query = named
    return ANSWERS[name](Post(name, path, query, body), warehouse, cache)
