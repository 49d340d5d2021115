"""An object store opened from its URL, one home for what the input (`pipeline.ingest.remote`)
and the publish (`pipeline.publish.bucket`) share: which URLs are taken (a plain bucket and
prefix), the retries of every request, and the settings (endpoint, region, credentials) read
from the environment, as AWS's tools read them."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Annotated
from urllib.parse import urlsplit

import obstore as obs
from obstore.store import from_url
from pydantic import PlainValidator

from pipeline.errors import BuildError, first_line

if TYPE_CHECKING:
    from obstore.store import ObjectStore, RetryConfig

SCHEMES = ("s3", "s3a", "gs", "az", "abfs", "abfss")
# obstore retries 5xx answers, connection errors and dropped connections of every request,
# with exponential backoff and jitter: 100 ms, 200 ms, ... up to 10 s, for at most 2 minutes.
RETRY: RetryConfig = {
    "max_retries": 8,
    "backoff": {"init_backoff": timedelta(milliseconds=100), "max_backoff": timedelta(seconds=10)},
    "retry_timeout": timedelta(minutes=2),
}
FAILURES = (obs.exceptions.BaseError, OSError)  # what a request or a file may raise
# S3's answer to a request to a bucket that does not exist (obstore says "not found" for the
# object, and the body names the bucket).
_NO_SUCH_BUCKET = re.compile(
    r"<Code>NoSuchBucket</Code>(?:.*?<BucketName>([^<]*)</BucketName>)?", re.S
)
# A bucket name as S3 allows it; a prefix of plain segments (no `.`/`..`, nothing escaped).
_BUCKET = frozenset("abcdefghijklmnopqrstuvwxyz0123456789.-_")
_SEGMENT = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")


def is_url(text: str) -> bool:
    """Whether a setting names a URL (`scheme://...`) rather than a local path."""
    return _URL.match(text) is not None


def _input_location(value: object) -> Path | str:
    """An object-store URL (`s3://bucket/prefix`) stays text, which a path would fold
    (`s3:/bucket`); anything else names a directory."""
    if isinstance(value, str) and is_url(value):
        return value
    if isinstance(value, str | Path):
        return Path(value)
    raise ValueError("an input directory or an object-store URL (s3://bucket/prefix)")


# Where the raw exports are: a directory, or an object-store URL (`pipeline.ingest.remote`).
InputLocation = Annotated[Path | str, PlainValidator(_input_location)]


def check_url(url: str) -> None:
    """Refuse, in one line, a URL that is not a plain bucket and prefix: a query, a fragment,
    `.`/`..` segments, escapes or other characters a store would silently rewrite."""
    scheme = url.partition("://")[0]
    if scheme not in SCHEMES:
        raise BuildError(
            f"{url}: not an object-store URL (s3://bucket/prefix); a local directory is "
            "published by `pipeline build --output DIR`, atomically"
        )
    parts = urlsplit(url)
    segments = parts.path.split("/")[1:]
    if segments and segments[-1] == "":
        segments.pop()  # one trailing slash
    bad = (
        "?" in url
        or "#" in url
        or "@" in parts.netloc
        or not parts.netloc
        or not set(parts.netloc) <= _BUCKET
        or any(s in ("", ".", "..") or not set(s) <= _SEGMENT for s in segments)
    )
    if bad:
        raise BuildError(
            f"{url}: not a plain bucket and prefix ({scheme}://bucket/prefix, the prefix of "
            "letters, digits, '.', '_' and '-' segments, no query, fragment, '..' or escapes)"
        )


def open_bucket(url: str) -> ObjectStore:
    """The store at `url` (s3://bucket/prefix); endpoint, region and credentials from the
    environment (AWS_ENDPOINT_URL, AWS_REGION, AWS_ACCESS_KEY_ID, ...), as AWS's tools read
    them."""
    check_url(url)
    try:
        return from_url(url, retry_config=RETRY)
    except (ValueError, *FAILURES) as exc:
        raise BuildError(f"{url}: {first_line(exc)}") from None


def missing_bucket(exc: BaseException) -> BuildError | None:
    """The one-line error of a request to a bucket that does not exist (S3's NoSuchBucket, which
    obstore reports as a missing object); None for any other failure."""
    found = _NO_SUCH_BUCKET.search(str(exc))
    if found is None:
        return None
    bucket = f"s3://{found[1]}" if found[1] else "the bucket"
    return BuildError(
        f"{bucket}: no such bucket (the object store answers NoSuchBucket); create it, or "
        "correct publish.to"
    )
