"""Publishing to an object store, against a real S3 server on 127.0.0.1 (moto's server mode, in
its own process): a first publish, a republish of 5% of the stores that uploads only what
changed (counted in the server's request log), a concurrent publish refused, a publish killed
by SIGKILL mid-upload and redone, and every canonical URL read back by key."""

from __future__ import annotations

import asyncio
import hashlib
import http.client
import os
import re
import signal
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote

import obstore as obs
import orjson
import polars as pl
import pytest

from pipeline.build import build
from pipeline.errors import BuildError
from pipeline.export.manifest import Manifest
from pipeline.publish.bucket import open_bucket
from pipeline.publish.objectstore import LEASE, POINTER, publish_release
from pipeline.settings import load_settings
from pipeline.tools.generate import generate
from tests.conftest import run_cli, site_files

ROOT = Path(__file__).resolve().parents[2]
CHANGED_STORE = "store-00003"  # 1 of the 20 stores: 5%
RELEASE_FILES = 5  # manifest.parquet, manifest.json, changes.json, build_report.json|.html
# The child publishes, and kills itself with SIGKILL once `after` uploads have completed: a
# kill mid-upload, placed by count, not by time.
KILLED_CHILD = """
import os, signal, sys
from pathlib import Path
from pipeline.publish.objectstore import publish_release
release, url, after = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
done = 0
def trace(step, key):
    global done
    done += step == "uploaded"
    if done == after:
        os.kill(os.getpid(), signal.SIGKILL)
publish_release(release, url, jobs=1, trace=trace)  # one in flight: killed between two
"""


@dataclass
class S3Server:
    endpoint: str
    log: Path

    def bucket(self, name: str) -> str:
        """Create a bucket; its URL with the prefix `site`."""
        request = urllib.request.Request(f"{self.endpoint}/{name}", method="PUT")
        urllib.request.urlopen(request, timeout=30).read()
        return f"s3://{name}/site"

    def puts(self, url: str) -> list[str]:
        """The keys (under the URL's prefix) of every PUT the server answered, in order."""
        path = "/" + url.removeprefix("s3://") + "/"
        found = re.findall(r'"PUT (\S+) HTTP/1\.1" 200', self.log.read_text())
        return [unquote(p)[len(path) :] for p in found if unquote(p).startswith(path)]


@pytest.fixture(scope="module")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """moto's S3 server on 127.0.0.1, on a port it picks itself (read from its log line)."""
    log = tmp_path_factory.mktemp("s3") / "requests.log"
    with log.open("w") as stderr:
        server = subprocess.Popen(
            [Path(sys.executable).parent / "moto_server", "-H", "127.0.0.1", "-p", "0"],
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
    try:
        deadline = datetime.now(UTC) + timedelta(seconds=60)
        while not (port := re.search(r"Running on http://127\.0\.0\.1:(\d+)", log.read_text())):
            assert server.poll() is None and datetime.now(UTC) < deadline, log.read_text()
            threading.Event().wait(0.05)
        endpoint = f"http://127.0.0.1:{port[1]}"
        with pytest.MonkeyPatch.context() as env:
            for name, value in {
                "AWS_ENDPOINT_URL": endpoint,
                "AWS_ALLOW_HTTP": "true",
                "AWS_REGION": "us-east-1",
                "AWS_ACCESS_KEY_ID": "test",
                "AWS_SECRET_ACCESS_KEY": "test",
            }.items():
                env.setenv(name, value)
            yield S3Server(endpoint, log)
    finally:
        server.terminate()
        server.wait(timeout=30)


@pytest.fixture(scope="module")
def releases(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Two published releases of one output: a generated input of 20 stores, then the same
    with one store changed (a third of its listings gone, the others' prices raised). Only the
    `categoryId` variants are materialised: about 100 files, for a server that takes about
    100 PUTs a second."""
    tmp = tmp_path_factory.mktemp("objectstore")
    generate(tmp / "in", 20, 300, seed=1)
    settings = load_settings(
        None, input=tmp / "in", output=tmp / "out", export={"variants": ["categoryId"]}
    )
    first = build(settings).release
    part = tmp / "in" / "stores" / "listings" / "part-000.parquet"
    listings = pl.read_parquet(part).with_row_index()
    mine = (pl.col("storeKey") == CHANGED_STORE) & (pl.col("index") % 3 == 0)
    listings.filter(~mine).with_columns(
        price=pl.when(pl.col("storeKey") == CHANGED_STORE)
        .then(pl.col("price") + 1)
        .otherwise(pl.col("price"))
    ).drop("index").write_parquet(part)
    second = build(settings).release
    return first, second


def md5s(release: Path) -> dict[str, str]:
    """key -> the ETag S3 gives a file put in one request (its MD5), for every site file."""
    files = site_files(release / "site")
    return {key: hashlib.md5(path.read_bytes()).hexdigest() for key, path in files.items()}


def bucket_site(url: str) -> dict[str, str]:
    """key -> ETag of every object of the bucket's site (one listing, no reads)."""
    store = open_bucket(url)
    return {
        m["path"]: (m["e_tag"] or "").strip('"')
        for batch in obs.list(store, "v1.39.0")
        for m in batch
    }


def pointer(url: str) -> dict[str, str]:
    return orjson.loads(bytes(obs.get(open_bucket(url), POINTER).bytes()))


def test_a_first_publish_then_a_republish_of_5_percent_of_the_stores(
    s3: S3Server, releases: tuple[Path, Path]
) -> None:
    first, second = releases
    url = s3.bucket("nightly")
    result = publish_release(first, url)
    site = site_files(first / "site")
    assert (result.uploaded, result.deleted, result.unchanged) == (len(site), 0, 0)
    puts = s3.puts(url)
    # Every file once, the release's files, the lease and the pointer: nothing else.
    assert sorted(k for k in puts if k.startswith("v1.39.0/")) == sorted(site)
    assert len(puts) == len(site) + RELEASE_FILES + 2
    assert puts[-1] == POINTER  # written last
    assert pointer(url)["build_id"] == first.name

    # Every canonical URL, read back by key: the site's bytes, as JSON (or the help page).
    store = open_bucket(url)

    async def read(key: str) -> tuple[bytes, str]:
        got = await obs.get_async(store, key)
        return bytes(await got.bytes_async()), str(got.attributes["Content-Type"])

    async def read_all() -> list[tuple[bytes, str]]:
        return await asyncio.gather(*(read(key) for key in site))

    for (key, path), (body, content_type) in zip(
        site.items(), asyncio.run(read_all()), strict=True
    ):
        assert body == path.read_bytes(), key
        assert content_type == (
            "text/html; charset=utf-8"
            if key.endswith(".html")
            else "application/json; charset=utf-8"
        )
    assert set(bucket_site(url)) == set(site)

    # 5% of the stores changed: the CLI publishes OUTPUT/current, and uploads only its pages.
    changed, removed = Manifest.load(second).changes(Manifest.load(first))
    assert len(changed) and len(removed)  # pages changed, pages removed
    assert {p.split("/")[2] for p in [*changed, *removed]} == {CHANGED_STORE}
    before = len(s3.puts(url))
    done = run_cli("publish", "--output", str(second.parent.parent), "--to", url)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(
        f"published build {second.name} to {url}: {len(changed)} objects uploaded ("
    )
    unchanged = len(Manifest.load(second)) - len(changed)
    assert f", {len(removed)} deleted, {unchanged} unchanged in " in done.stdout
    puts = s3.puts(url)[before:]
    assert sorted(k for k in puts if k.startswith("v1.39.0/")) == changed.to_list()
    assert len(puts) == len(changed) + RELEASE_FILES + 2
    assert bucket_site(url) == md5s(second)  # changed pages rewritten, removed ones deleted
    assert pointer(url)["build_id"] == second.name
    changes = orjson.loads(bytes(obs.get(store, f"releases/{second.name}/changes.json").bytes()))
    assert changes == {"changed": changed.to_list(), "removed": removed.to_list()}


def test_a_concurrent_publish_is_refused(s3: S3Server, releases: tuple[Path, Path]) -> None:
    first, second = releases
    url = s3.bucket("concurrent")
    refused: list[str] = []

    def second_publish() -> None:
        try:
            publish_release(second, url)
        except BuildError as exc:
            refused.append(str(exc))

    def meanwhile(step: str, key: str) -> None:  # a second publish, while the first uploads
        if step == "uploaded" and not refused:
            other = threading.Thread(target=second_publish)
            other.start()
            other.join()

    publish_release(first, url, trace=meanwhile)
    assert len(refused) == 1
    assert re.fullmatch(
        f"{url}: another publish is running \\(build {first.name}, its lease expires \\S+\\); "
        "if it is dead, publish again with --take-over",
        refused[0],
    )
    assert pointer(url)["build_id"] == first.name
    assert bucket_site(url) == md5s(first)

    # Past the lease (one taken over while its holder still ran): the pointer's conditional
    # put still lets only one of two publishes go live, and the next publish repairs the pages.
    won: list[str] = []

    def taken_over(step: str, key: str) -> None:
        if step == "pointer" and not won:
            other = threading.Thread(
                target=lambda: won.append(publish_release(first, url, take_over=True).build_id)
            )
            other.start()
            other.join()

    with pytest.raises(BuildError, match=f"another publish wrote {POINTER} since this one read"):
        publish_release(second, url, trace=taken_over)
    assert won == [first.name]
    assert pointer(url)["build_id"] == first.name
    assert bucket_site(url) == md5s(first)
    assert publish_release(second, url).build_id == second.name
    assert bucket_site(url) == md5s(second)
    assert [m["path"] for b in obs.list(open_bucket(url), "abandoned") for m in b] == []


def test_a_publish_killed_mid_upload_leaves_the_pointer_and_is_redone(
    s3: S3Server, releases: tuple[Path, Path]
) -> None:
    first, second = releases
    url = s3.bucket("killed")
    publish_release(first, url)
    before = len(s3.puts(url))
    child = subprocess.run(
        [sys.executable, "-c", KILLED_CHILD, str(second), url, "1"], cwd=ROOT, timeout=120
    )
    assert child.returncode == -signal.SIGKILL
    changed, _ = Manifest.load(second).changes(Manifest.load(first))
    assert POINTER not in s3.puts(url)[before:]
    assert pointer(url)["build_id"] == first.name  # the previous pointer stays
    now = bucket_site(url)
    written = {k for k in now if now[k] != md5s(first).get(k)}
    assert len(written) == 1 and len(changed) > 1 and written <= set(changed)  # mid-upload

    # Its lease stands until it expires: a publish is refused, unless told it is dead.
    with pytest.raises(BuildError, match=f"another publish is running \\(build {second.name}"):
        publish_release(first, url)
    # Republishing the live release rewrites the pages the dead publish left: the bucket,
    # not the pointer's manifest alone, is made the release again.
    again = publish_release(first, url, take_over=True)
    assert again.uploaded == len(changed)  # every page it may have written
    assert bucket_site(url) == md5s(first)
    assert publish_release(second, url).build_id == second.name
    assert bucket_site(url) == md5s(second)

    # A lease past its expiry (a publish that died long ago) is taken without asking.
    expired = datetime.now(UTC) - timedelta(seconds=1)
    lease = {"build_id": "dead", "publish": "0", "manifest": "releases/dead/manifest.parquet"}
    obs.put(open_bucket(url), LEASE, orjson.dumps({**lease, "expires": expired.isoformat()}))
    assert publish_release(second, url).uploaded == 0
    assert [m["path"] for b in obs.list(open_bucket(url), "abandoned") for m in b] == []
    assert [m["path"] for b in obs.list(open_bucket(url), LEASE) for m in b] == []


class FlakyProxy(ThreadingHTTPServer):
    """In front of the S3 server: answers the first PUT of each page with 503, and forwards
    every other request."""

    def __init__(self, upstream: str) -> None:
        super().__init__(("127.0.0.1", 0), _Flaky)
        self.upstream = upstream.removeprefix("http://")
        self.failed: list[str] = []


class _Flaky(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: FlakyProxy

    def forward(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if (
            self.command == "PUT"
            and "/v1.39.0/" in self.path
            and self.path not in self.server.failed
        ):
            self.server.failed.append(self.path)
            self.send_response(503)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        upstream = http.client.HTTPConnection(self.server.upstream, timeout=30)
        upstream.request(self.command, self.path, body, dict(self.headers))
        answer = upstream.getresponse()
        data = answer.read()
        self.send_response(answer.status)
        for name, value in answer.getheaders():
            if name.lower() not in ("connection", "content-length", "transfer-encoding"):
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        upstream.close()

    do_GET = do_PUT = do_POST = do_DELETE = forward

    def log_message(self, format: str, *args: object) -> None:  # quiet
        pass


def test_a_failed_upload_is_retried(
    s3: S3Server, releases: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    first, _ = releases
    url = s3.bucket("flaky")
    proxy = FlakyProxy(s3.endpoint)
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{proxy.server_address[1]}")
    try:
        publish_release(first, url)
    finally:
        proxy.shutdown()
        proxy.server_close()
        monkeypatch.setenv("AWS_ENDPOINT_URL", s3.endpoint)
    site = site_files(first / "site")
    assert len(proxy.failed) == len(site)  # every page failed once, with a 503
    assert sorted(k for k in s3.puts(url) if k.startswith("v1.39.0/")) == sorted(site)
    assert bucket_site(url) == md5s(first)


def test_only_object_store_urls_are_published_to(releases: tuple[Path, Path]) -> None:
    with pytest.raises(BuildError, match="not an object-store URL"):
        publish_release(releases[0], str(releases[0].parent / "elsewhere"))
    assert os.path.isdir(releases[0])
