"""Preview server: the published build over HTTP, exactly as the nginx configuration serves it.
(docs/serving.md, "The preview server")"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from http import HTTPStatus
from pathlib import Path
from typing import Any, cast

import duckdb
from waitress.server import BaseWSGIServer, create_server  # type: ignore[import-untyped]

from pipeline import db
from pipeline.api.responses import (
    ALLOWED_METHODS,
    UNAVAILABLE,
    ApiError,
    Response,
    method_not_allowed,
)
from pipeline.export.nginx.live import RELEASE_HEADER
from pipeline.paths import CURRENT, SITE, WAREHOUSE
from pipeline.serve import posts
from pipeline.serve.cache import AnswerCache
from pipeline.serve.headers import around, preflight
from pipeline.serve.protocol import Channel, head_limit, raise_open_files_limit
from pipeline.serve.routes import answer, origin_form, request_path
from pipeline.settings import ServeSettings

StartResponse = Callable[..., Any]
# The WSGI name of the header by which nginx names the build it answers for.
RELEASE_ENVIRON = "HTTP_" + RELEASE_HEADER.upper().replace("-", "_")
log = logging.getLogger(__name__)


@dataclass
class Published:
    """One published release: its site directory, its live answers kept whole (`cache`) and,
    once a live answer opened it, its warehouse connection."""

    release: Path
    cache: AnswerCache
    connection: duckdb.DuckDBPyConnection | None = None

    @property
    def site(self) -> Path:
        return self.release / SITE


class PublishedBuild:
    """Follows OUTPUT/current; one DuckDB cursor per thread on the release's warehouse."""

    def __init__(self, output: Path, limits: ServeSettings | None = None) -> None:
        self.output, self.limits = output, limits or ServeSettings()
        self._lock = threading.Lock()
        self._current: Published | None = None
        self._local = threading.local()
        self._refused: str | None = None  # why the warehouse last could not be opened
        self._other: tuple[str, Path] | None = None  # the last build asked for, not this one's

    def current(self) -> Published:
        """The release OUTPUT/current names now; ApiError(503) before any is published."""
        try:
            release = (self.output / CURRENT).resolve(strict=True)
        except OSError:
            raise ApiError(503, [UNAVAILABLE]) from None
        with self._lock:
            if self._current is None or self._current.release != release:
                cache = AnswerCache(self.limits.cache_mb * 2**20, self.limits.cache_store_listings)
                self._current = Published(release, cache)
            return self._current

    def refuse(self, asked: str, published: Published) -> None:
        """ApiError(503) for a request nginx sent for the release of build `asked`, not the
        published one's (`live.RELEASE_HEADER`): its answer would be this build's bytes for a
        URL of that release. Logged once a pair."""
        if self._other != (asked, published.release):
            log.warning(
                "nginx answers the release of build %s, this server build %s: requests sent "
                "for it are 503 until both serve one build",
                asked,
                published.release.name,
            )
            self._other = (asked, published.release)
        raise ApiError(503, [UNAVAILABLE])

    def cursor(self, published: Published) -> duckdb.DuckDBPyConnection:
        """This thread's cursor on the release's warehouse, which is opened (read-only) on first
        use; ApiError(503) while it cannot be, and the next live answer tries again."""
        cached = cast(
            tuple[Published, duckdb.DuckDBPyConnection] | None,
            getattr(self._local, "cursor", None),
        )
        if cached is not None and cached[0] is published:
            return cached[1]
        with self._lock:
            if published.connection is None:
                try:
                    published.connection = db.connect(
                        published.release / WAREHOUSE,
                        read_only=True,
                        threads=self.limits.duckdb_threads,
                    )
                except duckdb.Error as exc:
                    if str(exc) != self._refused:  # once per cause, not once per request
                        log.warning("warehouse unavailable, live answers are 503: %s", exc)
                        self._refused = str(exc)
                    raise ApiError(503, [UNAVAILABLE]) from None
                self._refused = None
            cursor = published.connection.cursor()
        cursor.execute(db.MACROS)  # temporary macros belong to one connection
        self._local.cursor = (published, cursor)
        return cursor


def application(
    output: Path, limits: ServeSettings | None = None
) -> Callable[[dict[str, Any], StartResponse], Iterable[bytes]]:
    build = PublishedBuild(output, limits)
    publish_at = build.limits.publish_at

    def respond(
        method: str, target: str, release: str | None, environ: dict[str, Any]
    ) -> tuple[Response, list[tuple[str, str]]]:
        try:
            if method == "OPTIONS":  # a CORS preflight, for any URL nginx would route
                request_path(target)
                return Response(204, b"", ""), preflight(environ)
            post = posts.match(target) if method == "POST" else None
            if post is not None:  # a POST path (`api.urls.POST_PATHS`), its body read
                published = build.current()
                if release and release != published.release.name:
                    build.refuse(release, published)
                cursor = functools.partial(build.cursor, published)
                # waitress read the body whole, within serve.max_request_body_size
                body = cast(bytes, environ["wsgi.input"].read())
                return posts.answer(post, body, cursor, published.cache), []
            if method not in ALLOWED_METHODS:
                origin_form(target)  # a malformed target is 400 before the method is looked at
                allow = [("Allow", ", ".join(ALLOWED_METHODS))]
                return ApiError(405, [method_not_allowed(method)]).response(), allow
            published = build.current()
            if release and release != published.release.name:
                build.refuse(release, published)
            cursor = functools.partial(build.cursor, published)
            return answer(cursor, target, published.site, published.cache), []
        except ApiError as exc:
            return exc.response(), []

    def app(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        method = environ["REQUEST_METHOD"]
        # The raw target, as the client sent it (PATH_INFO is already percent-decoded).
        target = environ.get("RAW_URI") or environ.get("REQUEST_URI")
        if not target:
            query = environ.get("QUERY_STRING", "")
            target = environ.get("PATH_INFO", "/") + (f"?{query}" if query else "")
        release = environ.get(RELEASE_ENVIRON)
        response, extra = respond(method, target, release, environ)
        status, headers, body = around(response, environ, publish_at)
        start_response(f"{status} {HTTPStatus(status).phrase}", headers + extra)
        return [] if method in ("HEAD", "OPTIONS") else [body]

    return app


def serve(
    output: Path,
    host: str,
    port: int,
    limits: ServeSettings | None = None,
    on_listen: Callable[[int], None] | None = None,
) -> None:
    """Serve until stopped. `port` 0 takes a free port; `on_listen` is told the port listened
    on (the first one, when the host names several addresses), once the sockets are bound and
    before the first request is taken. The open-files limit is raised first for
    `connection_limit` (SystemExit with one line where the hard limit is too low)."""
    limits = limits or ServeSettings()
    raise_open_files_limit(limits.connection_limit, limits.threads)
    logging.basicConfig()  # waitress logs its warnings (a queue of waiting requests, ...)
    sockets: dict[int, Any] = {}
    server = create_server(
        application(output, limits),
        map=sockets,
        host=host,
        port=port,
        ident="pipeline",
        threads=limits.threads,
        connection_limit=limits.connection_limit,
        channel_timeout=limits.channel_timeout,
        # waitress refuses a size equal to its limit, nginx one past it
        max_request_header_size=head_limit(limits.max_request_header_size),
        max_request_body_size=limits.max_request_body_size + 1,
        asyncore_use_poll=True,  # select() cannot watch a descriptor past 1023
    )
    for listener in list(sockets.values()):  # one per address the host names
        if isinstance(listener, BaseWSGIServer):
            listener.channel_class = Channel
    if on_listen is not None:
        # One address: a server with its port; several (localhost as 127.0.0.1 and ::1): a
        # server of servers, which lists what each listens on.
        listening = getattr(server, "effective_listen", None)
        on_listen(int(listening[0][1]) if listening else int(server.effective_port))
    server.run()
