"""The publish tests' fixture: the proxy in front of the test S3 server
(tests/support/proxy.py)."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from tests.support.proxy import Proxy
from tests.support.s3 import S3Server


@pytest.fixture
def proxy(s3: S3Server) -> Iterator[Proxy]:
    server = Proxy(s3.endpoint)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server
    finally:
        server.victim.resume.set()
        server.shutdown()
        server.server_close()
