"""The HTTP around the bytes, checked on one server (`pipeline serve`, nginx, nginx in front of
the bucket) over a real socket: the ETag and 304, gzip, Cache-Control and Expires until the
next publish, CORS, HEAD."""

from __future__ import annotations

import gzip
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime, parsedate_to_datetime

from tests.support.servers import Address, Reply, request

# With no publish scheduled (`serve.publish_at` unset): kept, but revalidated at every use.
UNSCHEDULED = "public, no-cache"
CORS = {
    "access-control-allow-origin": "*",
    "access-control-expose-headers": "ETag, Content-Range, Accept-Ranges",
}
# Headers of the connection and the moment, not of the answer (the seconds to the next
# publish, `assert_fresh`'s); nginx sends a compressed body chunked, and a HEAD without the
# chunks.
PER_SEND = ("date", "cache-control", "connection", "transfer-encoding")


def answer_headers(reply: Reply) -> dict[str, str]:
    return {k: v for k, v in reply.headers.items() if k not in PER_SEND}


def next_publish(date: datetime, publish_at: str) -> datetime:
    """The first time of day `publish_at` (HH:MM, UTC) strictly after `date`."""
    hours, minutes = (int(part) for part in publish_at.split(":"))
    at = date.replace(hour=hours, minute=minutes, second=0, microsecond=0)
    return at if at > date else at + timedelta(days=1)


def publish_ahead(reply: Reply) -> str:
    """A publish schedule (HH:MM, UTC) two hours after `reply`'s Date: ahead of the next
    answers, whatever the clock says."""
    date = parsedate_to_datetime(reply.headers["date"])
    return (date + timedelta(hours=2)).strftime("%H:%M")


def assert_fresh(reply: Reply, publish_at: str | None) -> None:
    """Fresh until the next publish at `publish_at`, counted from the answer's own Date (the
    wall clock's value does not matter): `Expires` that time, `max-age` the seconds to it;
    with no publish scheduled, `no-cache` and no Expires."""
    if publish_at is None:
        assert reply.headers["cache-control"] == UNSCHEDULED, reply.headers
        assert "expires" not in reply.headers, reply.headers
        return
    date = parsedate_to_datetime(reply.headers["date"]).astimezone(UTC)
    until = next_publish(date, publish_at)
    assert reply.headers["expires"] == format_datetime(until, usegmt=True), reply.headers
    seconds = int((until - date).total_seconds())
    assert 0 < seconds <= 86400
    assert reply.headers["cache-control"] == f"max-age={seconds}, public", reply.headers


def assert_cached(reply: Reply, publish_at: str | None = None) -> None:
    """A 200 or 304's headers: fresh until the next publish, readable from any origin, per
    encoding."""
    assert_fresh(reply, publish_at)
    assert {k: reply.headers.get(k) for k in CORS} == CORS, reply.headers
    assert reply.headers["vary"] == "Accept-Encoding", reply.headers
    assert "last-modified" not in reply.headers


def assert_error_headers(reply: Reply) -> None:
    """An error's headers: never kept, readable from any origin, no validator."""
    assert reply.headers["cache-control"] == "no-store", reply.headers
    assert "expires" not in reply.headers, reply.headers
    assert {k: reply.headers.get(k) for k in CORS} == CORS, reply.headers
    assert "etag" not in reply.headers


def assert_http_around(
    address: Address, target: str, body: bytes, publish_at: str | None = None
) -> str:
    """`target`'s 200 with `body`, and everything around it (fresh until a publish at
    `publish_at`); its ETag."""
    plain = request(address, target)
    assert (plain.status, plain.body) == (200, body), target
    assert "content-encoding" not in plain.headers
    assert_cached(plain, publish_at)
    etag = plain.headers["etag"]
    # Revalidated: 304, no body, the same validator and caching.
    for asked in (etag, f'"other", W/{etag}'):
        same = request(address, target, headers={"If-None-Match": asked})
        assert (same.status, same.body, same.headers["etag"]) == (304, b"", etag), asked
        assert_cached(same, publish_at)
    other = request(address, target, headers={"If-None-Match": '"other"'})
    assert (other.status, other.body) == (200, body)
    # Compressed on the fly: the exact bytes again, a weak validator, which revalidates too.
    zipped = request(address, target, headers={"Accept-Encoding": "gzip"})
    assert (zipped.status, zipped.headers["content-encoding"]) == (200, "gzip")
    assert gzip.decompress(zipped.body) == body
    assert zipped.headers["etag"] == f"W/{etag}"
    assert_cached(zipped, publish_at)
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
        assert_fresh(head, publish_at)
        assert answer_headers(head) == answer_headers(get), headers
    return etag
