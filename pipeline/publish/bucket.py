"""An object store's bucket as publishing uses it (`objectstore.py`): opened from a URL with
obstore, its settings from the environment; objects read with their ETag and written with
their content type, conditionally where asked; obstore retries every request."""

from __future__ import annotations

import hashlib
import io
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import obstore as obs
import polars as pl
from obstore.store import from_url

from pipeline.api.responses import HTML, JSON
from pipeline.errors import BuildError, first_line
from pipeline.export.manifest import Manifest

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


def open_bucket(url: str) -> ObjectStore:
    """The store at `url` (s3://bucket/prefix); endpoint, region and credentials from the
    environment (AWS_ENDPOINT_URL, AWS_REGION, AWS_ACCESS_KEY_ID, ...), as AWS's tools read
    them."""
    if url.partition("://")[0] not in SCHEMES:
        raise BuildError(
            f"{url}: not an object-store URL (s3://bucket/prefix); a local directory is "
            "published by `pipeline build --output DIR`, atomically"
        )
    try:
        return from_url(url, retry_config=RETRY)
    except (ValueError, *FAILURES) as exc:
        raise BuildError(f"{url}: {first_line(exc)}") from None


def attributes(key: str) -> dict[str, str]:
    """The headers an object is served with: the site's JSON, or its help page."""
    return {"Content-Type": HTML if key.endswith(".html") else JSON}


async def get(store: ObjectStore, key: str) -> tuple[bytes, str | None] | None:
    """The object's bytes and ETag; None when there is none."""
    try:
        got = await obs.get_async(store, key)
        return bytes(await got.bytes_async()), got.meta["e_tag"]
    except FileNotFoundError:
        return None


async def put(store: ObjectStore, key: str, body: bytes | Path, mode: Any = None) -> str | None:
    """Write one object (a file is read by obstore), conditionally with `mode` ("create", or
    {"e_tag": ...}); its new ETag."""
    done = await obs.put_async(store, key, body, attributes=attributes(key), mode=mode)
    return done["e_tag"]


async def get_manifest(store: ObjectStore, key: str, sha256: str | None) -> Manifest | None:
    """A manifest's rows from its Parquet copy in the bucket; None when it is not there, or
    not the one whose SHA-256 is `sha256`."""
    got = await get(store, key)
    if got is None or (sha256 and hashlib.sha256(got[0]).hexdigest() != sha256):
        return None
    return Manifest(pl.read_parquet(io.BytesIO(got[0])))
