"""The HTTP around the bytes, checked on one server (`pipeline serve`, nginx, nginx in front of
the bucket) over a real socket: the ETag and 304, gzip, Cache-Control, CORS, HEAD."""

from __future__ import annotations

import gzip

from pipeline.settings import ServeSettings
from tests.support.servers import Address, Reply, request

MAX_AGE = ServeSettings().max_age
CACHED = f"public, max-age={MAX_AGE}"
CORS = {"access-control-allow-origin": "*", "access-control-expose-headers": "ETag"}
# Headers of the connection and the moment, not of the answer; nginx sends a compressed body
# chunked, and a HEAD without the chunks.
PER_SEND = ("date", "connection", "transfer-encoding")


def answer_headers(reply: Reply) -> dict[str, str]:
    return {k: v for k, v in reply.headers.items() if k not in PER_SEND}


def assert_cached(reply: Reply) -> None:
    """A 200 or 304's headers: kept until the next build, readable from any origin, per encoding."""
    assert reply.headers["cache-control"] == CACHED, reply.headers
    assert {k: reply.headers.get(k) for k in CORS} == CORS, reply.headers
    assert reply.headers["vary"] == "Accept-Encoding", reply.headers
    assert "last-modified" not in reply.headers


def assert_error_headers(reply: Reply) -> None:
    """An error's headers: never kept, readable from any origin, no validator."""
    assert reply.headers["cache-control"] == "no-store", reply.headers
    assert {k: reply.headers.get(k) for k in CORS} == CORS, reply.headers
    assert "etag" not in reply.headers


def assert_http_around(address: Address, target: str, body: bytes) -> str:
    """`target`'s 200 with `body`, and everything around it; its ETag."""
    plain = request(address, target)
    assert (plain.status, plain.body) == (200, body), target
    assert "content-encoding" not in plain.headers
    assert_cached(plain)
    etag = plain.headers["etag"]
    # Revalidated: 304, no body, the same validator and caching.
    for asked in (etag, f'"other", W/{etag}'):
        same = request(address, target, headers={"If-None-Match": asked})
        assert (same.status, same.body, same.headers["etag"]) == (304, b"", etag), asked
        assert_cached(same)
    other = request(address, target, headers={"If-None-Match": '"other"'})
    assert (other.status, other.body) == (200, body)
    # Compressed on the fly: the exact bytes again, a weak validator, which revalidates too.
    zipped = request(address, target, headers={"Accept-Encoding": "gzip"})
    assert (zipped.status, zipped.headers["content-encoding"]) == (200, "gzip")
    assert gzip.decompress(zipped.body) == body
    assert zipped.headers["etag"] == f"W/{etag}"
    assert_cached(zipped)
    again = request(
        address, target, headers={"Accept-Encoding": "gzip", "If-None-Match": f"W/{etag}"}
    )
    assert (again.status, again.body) == (304, b"")
    refused = request(address, target, headers={"Accept-Encoding": "gzip;q=0, identity"})
    assert "content-encoding" not in refused.headers and refused.body == body
    # HEAD: GET's headers, no body, plain or compressed.
    for headers in ({}, {"Accept-Encoding": "gzip"}):
        get = request(address, target, headers=headers)
        head = request(address, target, method="HEAD", headers=headers)
        assert (head.status, head.body) == (200, b"")
        assert answer_headers(head) == answer_headers(get), headers
    return etag
