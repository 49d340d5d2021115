"""Preview server: the published build over HTTP, exactly as the nginx configuration serves it.

A WSGI application served by waitress (threads). Materialised pages come from the site's files;
every other request is computed from the warehouse by the same SQL the exporter used. The
server follows `OUTPUT/current`: each release holds its site and a link to its warehouse, so a
request sees one build whole. When a new build is published, the next request uses it; requests
already running finish on the build they started with. (Each release's warehouse has a path of
its own, which matters: DuckDB reuses an open database for a path it has seen in the process.)
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from pipeline import db
from pipeline.api.responses import ALLOWED_METHODS, ApiError, method_not_allowed
from pipeline.paths import CURRENT, SITE, WAREHOUSE
from pipeline.serve.routes import answer

StartResponse = Callable[..., Any]


@dataclass(frozen=True)
class Published:
    """One published release: its warehouse connection and its site directory."""

    release: Path
    connection: duckdb.DuckDBPyConnection

    @property
    def site(self) -> Path:
        return self.release / SITE


class PublishedBuild:
    """Follows OUTPUT/warehouse.duckdb and OUTPUT/current; one DuckDB cursor per thread."""

    def __init__(self, output: Path) -> None:
        self.output = output
        self._lock = threading.Lock()
        self._current: Published | None = None
        self._local = threading.local()

    def _published(self) -> Published:
        release = (self.output / CURRENT).resolve(strict=True)
        with self._lock:
            if self._current is None or self._current.release != release:
                self._current = Published(release, db.connect(release / WAREHOUSE, read_only=True))
            return self._current

    def cursor(self) -> tuple[duckdb.DuckDBPyConnection, Path]:
        published = self._published()
        cached = getattr(self._local, "cursor", None)
        if cached is None or cached[0] is not published:
            cursor = published.connection.cursor()
            for macro in db.MACROS:  # temporary macros belong to one connection
                cursor.execute(macro)
            self._local.cursor = (published, cursor)
            cached = self._local.cursor
        return cached[1], published.site


def application(output: Path) -> Callable[[dict[str, Any], StartResponse], Iterable[bytes]]:
    build = PublishedBuild(output)

    def app(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        method = environ["REQUEST_METHOD"]
        if method not in ALLOWED_METHODS:
            response = ApiError(405, [method_not_allowed(method)]).response()
            extra = [("Allow", ", ".join(ALLOWED_METHODS))]
        else:
            # The raw target, as the client sent it (PATH_INFO is already percent-decoded).
            raw_path = environ.get("RAW_URI") or environ.get("REQUEST_URI")
            if not raw_path:
                query = environ.get("QUERY_STRING", "")
                raw_path = environ.get("PATH_INFO", "/") + (f"?{query}" if query else "")
            con, site = build.cursor()
            response = answer(con, raw_path, site)
            extra = []
        reason = {
            200: "OK",
            400: "Bad Request",
            404: "Not Found",
            405: "Method Not Allowed",
            414: "URI Too Long",
        }.get(response.status, "Error")
        start_response(
            f"{response.status} {reason}",
            [
                ("Content-Type", response.content_type),
                ("Content-Length", str(len(response.body))),
                *extra,
            ],
        )
        return [] if method == "HEAD" else [response.body]

    return app


def serve(
    output: Path,
    host: str,
    port: int,
    threads: int = 8,
    on_listen: Callable[[int], None] | None = None,
) -> None:
    """Serve until stopped. `port` 0 takes a free port; `on_listen` is told the port listened
    on (the first one, when the host names several addresses), once the sockets are bound and
    before the first request is taken."""
    from waitress.server import create_server  # type: ignore[import-untyped]

    logging.basicConfig()  # waitress logs its warnings (a queue of waiting requests, ...)
    app = application(output)
    server = create_server(app, host=host, port=port, threads=threads, ident="pipeline")
    if on_listen is not None:
        # One address: a server with its port; several (localhost as 127.0.0.1 and ::1): a
        # server of servers, which lists what each listens on.
        listening = getattr(server, "effective_listen", None)
        on_listen(int(listening[0][1]) if listening else int(server.effective_port))
    server.run()
