"""The test S3 server (moto's, in its own process on 127.0.0.1) and what tests read of its
request log; files put into it as objects."""

from __future__ import annotations

import re
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import parse_qs, unquote

import boto3
import obstore as obs
import pytest

from pipeline.publish.bucket import open_bucket
from tests.support.inputs import ROOT


@dataclass
class S3Server:
    endpoint: str
    log: Path
    names: set[str] = field(default_factory=set)  # the buckets created, to keep each new

    def bucket(self, name: str) -> str:
        """Create a new bucket named `name`, or `name-2`, `name-3`, ... where the server has
        had that name (a server serves several modules' tests, and pytest-xdist's work stealing
        may set a module's fixture up twice on one worker); its URL with the prefix `site`."""
        taken, n = name, 1
        while name in self.names:
            n += 1
            name = f"{taken}-{n}"
        self.names.add(name)
        request = urllib.request.Request(f"{self.endpoint}/{name}", method="PUT")
        urllib.request.urlopen(request, timeout=30).read()
        return f"s3://{name}/site"

    def puts(self, url: str) -> list[str]:
        """The keys (under the URL's prefix) of every PUT the server answered, in order."""
        path = "/" + url.removeprefix("s3://") + "/"
        found = re.findall(r'"PUT (\S+) HTTP/1\.1" 200', self.log.read_text())
        return [unquote(p)[len(path) :] for p in found if unquote(p).startswith(path)]

    def put_sizes(self, url: str) -> list[tuple[str, int]]:
        """`puts`, each with the bytes its request sent."""
        path = "/" + url.removeprefix("s3://") + "/"
        found = re.findall(r'"PUT (\S+) HTTP/1\.1" 200 \S+ (\d+)', self.log.read_text())
        return [(unquote(p)[len(path) :], int(n)) for p, n in found if unquote(p).startswith(path)]

    def gets(self, url: str) -> list[str]:
        """The keys (under the URL's prefix) of every object GET the server answered, in
        order (listings left out)."""
        path = "/" + url.removeprefix("s3://") + "/"
        found = re.findall(r'"GET (\S+) HTTP/1\.1" 20[06]', self.log.read_text())
        keys = [unquote(p) for p in found if "?" not in p]
        return [k[len(path) :] for k in keys if k.startswith(path)]

    def lists(self, url: str) -> list[str]:
        """The prefixes (under the URL's prefix; "" for all of it) of every listing of the
        URL's bucket the server answered, in order."""
        bucket, _, base = url.removeprefix("s3://").partition("/")
        found = re.findall(rf'"GET /{bucket}\?(\S+) HTTP/1\.1" 200', self.log.read_text())
        queries = [parse_qs(q, keep_blank_values=True) for q in found if "list-type=2" in q]
        return [q.get("prefix", [""])[0].removeprefix(f"{base}/") for q in queries]


@contextmanager
def pointed_at(endpoint: str) -> Iterator[None]:
    """The AWS_* settings that point every client at the test S3 server at `endpoint`, in the
    environment until the block ends."""
    with pytest.MonkeyPatch.context() as env:
        for name, value in {
            "AWS_ENDPOINT_URL": endpoint,
            "AWS_ALLOW_HTTP": "true",
            "AWS_REGION": "us-east-1",
            "AWS_ACCESS_KEY_ID": "test",
            "AWS_SECRET_ACCESS_KEY": "test",
        }.items():
            env.setenv(name, value)
        yield


# `moto_server`, with its list of services read once: moto lists its package's folders again
# for every request it answers (a `listdir` and a `stat` a service, twice), which was over half
# of its time for an object's GET. Each request's line (`"PUT /key HTTP/1.1" 200 -`, which
# tests count, with the request's Content-Length last) is written in one call, not through `logging`: a tenth of moto's time went to
# its handlers' lock and its date.
MOTO_SERVER = """
import os
import sys

import moto.backends
from moto.server import main
from werkzeug.serving import WSGIRequestHandler
from werkzeug.urls import uri_to_iri

services = tuple(moto.backends.list_of_moto_modules())
moto.backends.list_of_moto_modules = lambda: services


def log_request(self, code="-", size="-"):
    sent = self.headers.get("Content-Length", "-")
    line = f'"{self.command} {uri_to_iri(self.path)} {self.request_version}" {code} {size} {sent}\\n'
    os.write(2, line.encode())


WSGIRequestHandler.log_request = log_request
main(sys.argv[1:])
"""


@contextmanager
def moto_server(log: Path) -> Iterator[str]:
    """moto's S3 server on 127.0.0.1, on a port it picks itself (read from its log line, which
    goes to `log`): its endpoint, until the block ends."""
    with log.open("w") as stderr:
        server = subprocess.Popen(
            [sys.executable, "-c", MOTO_SERVER, "-H", "127.0.0.1", "-p", "0"],
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
    try:
        deadline = datetime.now(UTC) + timedelta(seconds=60)
        while not (port := re.search(r"Running on http://127\.0\.0\.1:(\d+)", log.read_text())):
            assert server.poll() is None and datetime.now(UTC) < deadline, log.read_text()
            threading.Event().wait(0.05)
        yield f"http://127.0.0.1:{port[1]}"
    finally:
        server.terminate()
        server.wait(timeout=30)


def upload(url: str, directory: Path) -> None:
    """Every file under `directory` as an object, its key its path relative to the directory."""
    store = open_bucket(url)
    for path in sorted(directory.rglob("*")):
        if path.is_file():
            obs.put(store, path.relative_to(directory).as_posix(), path)


# The bucket policy docs/serving.md gives ("nginx in front of a bucket", "Permissions").
DOCUMENTED_POLICY = re.search(
    r"\*\*Permissions\.\*\*.*?```json\n(.*?)```", (ROOT / "docs" / "serving.md").read_text(), re.S
)[1]  # type: ignore[index]


def readable(s3: S3Server, url: str) -> None:
    """What a CDN's origin or a public site allows: anyone may read the pages (`stores/`,
    `common/`), not the release documents (their maps list the store keys). The policy is
    docs/serving.md's, as written there."""
    bucket, _, prefix = url.removeprefix("s3://").partition("/")
    policy = DOCUMENTED_POLICY.replace("BUCKET", bucket).replace("PREFIX", prefix)
    boto3.client("s3", endpoint_url=s3.endpoint).put_bucket_policy(Bucket=bucket, Policy=policy)
