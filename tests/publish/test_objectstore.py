"""Publishing to an object store, against a real S3 server on 127.0.0.1 (moto's server mode, in
its own process): a first publish, a republish of 5% of the stores that writes only the changed
store's new version (counted in the server's request log) and never a key twice, the
collection of what no kept release names, two publishes of which only one commits, retries,
refused URLs, a damaged lease or pointer, and the exit code of many publishes in a row."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import obstore as obs
import orjson
import polars as pl
import pytest

from pipeline.build import build
from pipeline.errors import BuildError
from pipeline.export.records.manifest import Manifest
from pipeline.publish import bucket
from pipeline.publish import pointer as pointer_doc
from pipeline.publish.bucket import LEASE, POINTER, RELEASES, STORES, group_of, open_bucket
from pipeline.publish.collect import collect
from pipeline.publish.manifests import PART
from pipeline.publish.objectstore import publish_release
from pipeline.serve.reader import BucketReader
from pipeline.settings import load_settings
from pipeline.tools.generate import generate
from tests.support.bucket import (
    FEW_PAGES,
    Build,
    bucket_keys,
    check_bucket,
    manifest_of_parts,
    only_kept_left,
    pointer,
    url_of,
)
from tests.support.proxy import fork_cli, relay, reply
from tests.support.s3 import S3Server

CHANGED_STORE = "store-00003"  # 1 of the 20 stores: 5%


@pytest.fixture(scope="module")
def releases(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Two published releases of one output: a generated input of 20 stores, then the same
    with one store changed (a third of its listings gone, the others' prices raised), of
    `FEW_PAGES`: 111 files, not the defaults' 234."""
    tmp = tmp_path_factory.mktemp("objectstore")
    generate(tmp / "in", 20, 300, seed=1)
    settings = load_settings(None, input=tmp / "in", output=tmp / "out", export=FEW_PAGES)
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


def _builds(*releases: Path) -> dict[str, Build]:
    return {r.name: Build.of(r) for r in releases}


def test_a_first_publish_then_a_republish_of_5_percent_of_the_stores(
    s3: S3Server, releases: tuple[Path, Path]
) -> None:
    first, second = releases
    url = s3.bucket("nightly")
    result = publish_release(first, url, grace=0)
    files = len(Manifest.load(first))
    assert (result.uploaded, result.unchanged, result.deleted) == (files, 0, 0)
    assert result.stores_new == 20
    puts = s3.puts(url)
    pages = [k for k in puts if k.startswith(("stores/", "common/")) and not k.endswith(PART)]
    assert len(pages) == files
    assert len([k for k in puts if k.endswith(PART)]) == 20 + 1  # a part a version
    assert puts[-1] == POINTER  # written last: the commit
    assert check_bucket(url, _builds(first)) == first.name

    # 5% of the stores changed: the CLI publishes OUTPUT/current; only that store gets a new
    # version (every one of its pages), the others keep theirs, and the common pages get one
    # (the store's listings move the marketplace's prices).
    done = fork_cli("publish", "--output", str(second.parent.parent), "--to", url, "--grace", "0")
    assert done.returncode == 0, done.stderr
    manifest = Manifest.load(second)
    mine = len(manifest.slice_under(f"v1.39.0/stores/{CHANGED_STORE}"))
    common = len(manifest.frame) - len(manifest.slice_under("v1.39.0/stores"))
    assert done.stdout.startswith(f"published build {second.name} to {url} (release {second.name}.")
    assert f": {mine + common} objects uploaded (" in done.stdout
    assert " in 1 new store versions, " in done.stdout
    new_puts = s3.puts(url)[len(puts) :]
    new_pages = [
        k for k in new_puts if k.startswith(("stores/", "common/")) and not k.endswith(PART)
    ]
    assert len(new_pages) == mine + common
    stores = {k.split("/")[1] for k in new_pages if k.startswith("stores/")}
    versions = {k.split("/")[1] for k in new_pages if k.startswith("common/")}
    committed = BucketReader(url).snapshot()
    assert stores == {CHANGED_STORE} and versions == {committed.common}  # type: ignore[union-attr]
    assert new_puts[-1] == POINTER
    # No key but the pointer and the lease was ever written twice: versions are immutable.
    assert sorted(k for k, n in Counter(s3.puts(url)).items() if n > 1) == [POINTER, LEASE]
    assert check_bucket(url, _builds(first, second)) == second.name
    now = pointer(url)
    assert [e["release"] for e in now["history"]] == [  # type: ignore[union-attr, index]
        now["release"],
        result.release,
    ]
    changes = orjson.loads(
        bytes(obs.get(open_bucket(url), f"releases/{now['release']}/changes.json").bytes())
    )
    changed, removed = Manifest.load(second).changes(Manifest.load(first))
    assert changes == {"changed": changed.to_list(), "removed": removed.to_list()}

    # Past the grace period, a third publish (the first build again) keeps the last two
    # releases' versions: the changed store's first version is named again by a new one.
    third = publish_release(first, url, keep=2, grace=0, allow_older=True)
    assert third.stores_new == 1 and third.deleted > 0
    before = set(bucket_keys(url))
    assert collect(url, keep=1, grace=3600) == 0  # inside the grace period: nothing goes
    assert set(bucket_keys(url)) == before
    collect(url, keep=1, grace=0)
    kept = {k.split("/")[2] for k in bucket_keys(url) if k.startswith(f"stores/{CHANGED_STORE}")}
    assert len(kept) == 1  # the current release's version only
    assert check_bucket(url, _builds(first, second)) == first.name


class _CutShort(Exception):
    pass


def test_a_commit_collects_the_releases_it_drops_and_finishes_a_collection_cut_short(
    s3: S3Server, releases: tuple[Path, Path]
) -> None:
    """Keeping 1 release: a publish stopped after its commit, before its collection, leaves
    the release it dropped whole; the next publish collects both dropped releases (their
    versions, then their folders) and leaves only its own. No commit lists more than
    `releases/` and the groups it deletes: never the whole bucket."""
    first, second = releases
    url = s3.bucket("dropped")
    publish_release(first, url, keep=1, grace=0)
    one = BucketReader(url).snapshot()

    def cut(step: str, key: str) -> None:
        if step == "published":
            raise _CutShort

    listed = len(s3.lists(url))
    with pytest.raises(_CutShort):
        publish_release(second, url, keep=1, grace=0, trace=cut)
    two = BucketReader(url).snapshot()
    assert one is not None and two is not None and two.build_id == second.name
    # Before its commit, it listed only the versions it reused (to verify them): its
    # collection comes after the commit.
    reused = (one.prefixes() & two.prefixes()) - {f"{RELEASES}{one.release}/"}
    assert sorted(s3.lists(url)[listed:]) == sorted(reused)
    before = bucket_keys(url)
    assert one.prefixes() | two.prefixes() <= {group_of(k) for k in before}  # none collected

    listed = len(s3.lists(url))
    third = publish_release(first, url, keep=1, grace=0, allow_older=True)
    now = BucketReader(url).snapshot()
    assert now is not None and now.build_id == first.name
    dropped = (one.prefixes() | two.prefixes()) - now.prefixes()
    assert f"{RELEASES}{one.release}/" in dropped and f"{RELEASES}{two.release}/" in dropped
    assert f"{STORES}{CHANGED_STORE}/{two.stores[CHANGED_STORE]}/" in dropped
    reused = {p for p in two.prefixes() & now.prefixes() if not p.startswith(RELEASES)}
    assert sorted(s3.lists(url)[listed:]) == sorted(["releases/", *reused, *dropped])
    assert third.deleted == sum(group_of(k) in dropped for k in before)
    only_kept_left(url, 1)
    assert check_bucket(url, _builds(first)) == first.name


def test_of_two_publishes_only_one_commits(s3: S3Server, releases: tuple[Path, Path]) -> None:
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
    assert refused[0].startswith(
        f"{url}: another publish is running (build {first.name}, its lease expires "
    )
    assert refused[0].endswith("); if it is dead, publish again with --take-over")
    assert check_bucket(url, _builds(first, second)) == first.name

    # With the lease taken over (its holder still running): the pointer's compare-and-swap
    # lets one commit; the loser's versions are left for collection, named by no release.
    won: list[str] = []

    def taken_over(step: str, key: str) -> None:
        if step == "pointer" and not won:
            other = threading.Thread(
                target=lambda: won.append(
                    publish_release(first, url, take_over=True, grace=0).release
                )
            )
            other.start()
            other.join()

    with pytest.raises(BuildError, match=f"another publish wrote {POINTER} since this one read"):
        publish_release(second, url, trace=taken_over, grace=0)
    assert pointer(url)["release"] == won[0]
    assert check_bucket(url, _builds(first, second)) == first.name
    assert publish_release(second, url, grace=0).build_id == second.name
    collect(url, keep=1, grace=0)  # deletes only: what is whole after it was whole before
    assert check_bucket(url, _builds(first, second)) == second.name
    stores = {"/".join(k.split("/")[:3]) for k in bucket_keys(url) if k.startswith("stores/")}
    assert len(stores) == 20  # one version a store: the loser's are gone


def test_a_large_map_is_written_in_parts(
    s3: S3Server, releases: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    first, _ = releases
    url = s3.bucket("parts")
    monkeypatch.setattr(bucket, "PART_STORES", 7)
    release = publish_release(first, url).release
    parts = [k for k in bucket_keys(url) if k.startswith(f"releases/{release}/stores-")]
    assert [k.rpartition("/")[2] for k in parts] == [f"stores-0000{n}.json" for n in range(3)]
    assert check_bucket(url, _builds(first)) == first.name  # the map read back whole


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
            and "/stores/" in self.path
            and self.path not in self.server.failed
        ):
            self.server.failed.append(self.path)
            self.send_response(503)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        reply(self, *relay(self, self.server.upstream, body))

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
    stores = Manifest.load(first).slice_under("v1.39.0/stores")
    # Every store page failed once, with a 503, and so did each store version's manifest part.
    assert len(proxy.failed) == len(stores) + 20
    assert check_bucket(url, _builds(first)) == first.name


@pytest.mark.parametrize(
    "target", ["s3://b/q?x", "s3://b/q#x", "s3://b/../up", "s3://b/pct%20x", "s3://b//q", "/tmp/x"]
)
def test_a_target_that_is_not_a_plain_bucket_and_prefix_is_refused(
    s3: S3Server, releases: tuple[Path, Path], target: str
) -> None:
    done = fork_cli("publish", "--output", str(releases[0].parent.parent), "--to", target)
    assert done.returncode == 1
    assert done.stderr.startswith(f"publish failed: {target}: not ")
    assert done.stderr.count("\n") == 1 and done.stdout == ""


def test_a_damaged_lease_or_pointer_is_one_line_and_cleared_by_take_over(
    s3: S3Server, releases: tuple[Path, Path]
) -> None:
    first, second = releases
    output = str(second.parent.parent)
    url = s3.bucket("damaged")
    store = open_bucket(url)
    publish_release(first, url)
    for key, body in ((LEASE, b"{not json"), (POINTER, b'{"release": 1}')):
        obs.put(store, key, body)
        done = fork_cli("publish", "--output", output, "--to", url)
        assert done.returncode == 1, done.stderr
        assert done.stderr == (
            f"publish failed: {url}/{key}: damaged (not a "
            f"{'lease' if key == LEASE else 'release pointer'}); if no publish is running, "
            "publish again with --take-over to replace it\n"
        )
        done = fork_cli("publish", "--output", output, "--to", url, "--take-over")
        assert done.returncode == 0, done.stderr
        assert check_bucket(url, _builds(first, second)) == second.name
    assert LEASE not in bucket_keys(url)


POINTER_BYTES = orjson.dumps(
    {
        "release": "b2.t2",
        "document": "releases/b2.t2/release.json",
        "sha256": "22",
        "committed_at": "2026-01-02T00:00:00+00:00",
        "build_id": "b2",
        "publish": "t2",
        "history": [
            {
                "release": r,
                "document": f"releases/{r}/release.json",
                "sha256": d,
                "committed_at": t,
            }
            for r, d, t in (
                ("b2.t2", "22", "2026-01-02T00:00:00+00:00"),
                ("b1.t1", "11", "2026-01-01T00:00:00+00:00"),
            )
        ],
        "collected": "t3",
        "collected_at": "2026-01-03T00:00:00+00:00",
    }
)


@pytest.mark.parametrize(
    "body",
    [
        b"{not json",
        b"[]",
        b'{"release": 1}',
        POINTER_BYTES.replace(b'"history":[', b'"history":[1,'),
        POINTER_BYTES.replace(b'"sha256":"11"', b'"sha256":11'),
        POINTER_BYTES.replace(b'"history":[', b'"history":{"x":[').replace(b"}],", b"}]},"),
        POINTER_BYTES.replace(b'"publish":"t2"', b'"publish":2'),
    ],
)
def test_a_damaged_pointer_is_refused_without_asserts(body: bytes) -> None:
    with pytest.raises(bucket.Damaged, match=r"^s3://b/current.json: damaged \(not a release"):
        pointer_doc.Pointer.parse("s3://b", body)


def test_the_pointer_and_the_lease_are_read_and_written_again_byte_for_byte() -> None:
    pointer = pointer_doc.Pointer.parse("s3://b", POINTER_BYTES)
    assert pointer.entry == pointer.history[0]
    assert [e.release for e in pointer.history] == ["b2.t2", "b1.t1"]
    assert pointer.to_json() == POINTER_BYTES
    lease = b'{"build_id":"b1","publish":"t1","expires":"2026-01-01T01:00:00+00:00"}'
    assert pointer_doc.Lease.parse("s3://b", lease).to_json() == lease
    for damaged in (b"[]", b'{"build_id":"b1","expires":"2026-01-01T01:00:00"}', b'{"x":1}'):
        with pytest.raises(bucket.Damaged, match=r"^s3://b/lease.json: damaged \(not a lease"):
            pointer_doc.Lease.parse("s3://b", damaged)


# `python -m pipeline ARGS`, with a handler the interpreter's shutdown would run: it says so on
# standard error.
AT_SHUTDOWN = (
    "import atexit, os, runpy; atexit.register(os.write, 2, b'shutdown ran\\n'); "
    "runpy.run_module('pipeline', run_name='__main__', alter_sys=True)"
)


def test_every_successful_publish_exits_0(s3: S3Server, releases: tuple[Path, Path]) -> None:
    """The CLI ends a publish without the interpreter's shutdown (where obstore's runtime
    threads and pyarrow's S3 finaliser once aborted 3 publishes of 110 with 134): a publish
    that uploads and one that changes nothing each exit 0, and a handler the shutdown would run
    never runs."""
    output = str(releases[1].parent.parent)
    url = s3.bucket("loop")
    for n in range(2):
        command = [sys.executable, "-c", AT_SHUTDOWN, "publish", "--output", output, "--to", url]
        done = subprocess.run(
            [*command, "--grace", "0"],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert (done.returncode, done.stderr) == (0, ""), n
        assert done.stdout.startswith("published build ") and done.stdout.endswith(" s\n")
    assert len(pointer(url)["history"]) == 2  # type: ignore[arg-type]


@pytest.mark.parametrize("stdout", ["/dev/full", "closed"])
def test_a_committed_publish_exits_0_whatever_standard_output_does(
    s3: S3Server, releases: tuple[Path, Path], stdout: str
) -> None:
    """The exit code says whether the commit happened: a summary that standard output cannot
    take (a full device, or closed) is said on stderr, and the publish still exits 0."""
    second = releases[1]
    url = s3.bucket("stdout-" + stdout.strip("/").replace("/", "-"))
    command = [sys.executable, "-m", "pipeline", "publish"]
    command += ["--output", str(second.parent.parent), "--to", url]
    if stdout == "closed":  # the command's file descriptor 1 closed, as `>&-` leaves it
        done = subprocess.run(
            ["sh", "-c", '"$@" >&-', "sh", *command], capture_output=True, text=True, timeout=300
        )
    else:
        with open(stdout, "w") as full:
            done = subprocess.run(command, stdout=full, stderr=subprocess.PIPE, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stderr.startswith(f"published build {second.name} to {url} (release ")
    assert "standard output could not take this line" in done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert pointer(url)["build_id"] == second.name


def test_a_damaged_object_is_refused_by_the_reader_and_uploaded_again_by_the_next_publish(
    s3: S3Server, releases: tuple[Path, Path]
) -> None:
    """A night that changes nothing lists each version it reuses once (keys and sizes) and
    writes no page. An object of a committed version overwritten, another deleted, a
    version's manifest part overwritten and another's deleted: the reader refuses them in one
    line; the next publish finds the versions missing an object or of another size damaged and
    uploads them again under versions of its own (exit 0), and every later release is whole."""
    first, second = releases
    url = s3.bucket("damaged-pages")
    store = open_bucket(url)
    publish_release(first, url, grace=0)
    release = BucketReader(url).snapshot()
    assert release is not None

    puts, lists = len(s3.puts(url)), len(s3.lists(url))
    publish_release(first, url, grace=0)  # nothing changed
    versions = sorted(p for p in release.prefixes() if not p.startswith(RELEASES))
    assert sorted(s3.lists(url)[lists:]) == sorted([*versions, "releases/"])
    assert not [k for k in s3.puts(url)[puts:] if k.startswith(("stores/", "common/"))]

    release = BucketReader(url).snapshot()
    assert release is not None
    files = Manifest.load(first)
    overwritten = files.slice_under("v1.39.0/stores/store-00001")["path"][0]
    deleted = files.slice_under("v1.39.0/stores/store-00002")["path"][0]
    obs.put(store, release.key(overwritten), b'{"success":true,"results":[]}')
    obs.delete(store, release.key(deleted))
    # A version's manifest part overwritten, and another's deleted: the pages it vouches for
    # are refused.
    parts = [f"stores/{k}/{release.stores[k]}/{PART}" for k in ("store-00004", "store-00005")]
    obs.put(store, parts[0], Manifest.load(second).parquet())
    obs.delete(store, parts[1])
    reader = BucketReader(url)
    for path in (overwritten, deleted):
        with pytest.raises(bucket.Damaged, match=f"^{url}/{release.key(path)}: missing, or not"):
            reader.read(release, [url_of(path)])
    for key, part in zip(("store-00004", "store-00005"), parts, strict=True):
        path = files.slice_under(f"v1.39.0/stores/{key}")["path"][0]
        with pytest.raises(bucket.Damaged, match=f"^{url}/{part}: missing, or not the part"):
            reader.read(release, [url_of(path)])

    done = fork_cli("publish", "--output", str(second.parent.parent), "--to", url, "--grace", "0")
    assert done.returncode == 0, done.stderr
    assert done.stdout.endswith(" (3 damaged versions in the bucket uploaded again)\n")
    now = BucketReader(url).snapshot()
    assert now is not None
    for key in ("store-00001", "store-00002", "store-00005"):
        assert now.stores[key] != release.stores[key]
    # An overwritten part escapes the listing's check, whatever its size (a part's size is not
    # recorded): the reader refuses the pages it vouches for; deleted, it is written again,
    # with its version, by the next publish.
    assert now.stores["store-00004"] == release.stores["store-00004"]
    obs.delete(store, parts[0])
    assert publish_release(first, url, allow_older=True).repaired == 1
    assert check_bucket(url, _builds(first, second)) == first.name
    assert publish_release(first, url, allow_older=True).repaired == 0


def test_an_unchanged_night_at_another_hour_uploads_only_the_release_documents(
    s3: S3Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two builds of one input, hours apart (no SOURCE_DATE_EPOCH: the bulk files' index is
    carried, not restated), each published: the second writes only its release's documents,
    the pointer and the lease, at most 20 PUTs, and at most a quarter more bytes than those
    documents."""
    monkeypatch.delenv("SOURCE_DATE_EPOCH")
    generate(tmp_path / "in", 4, 40, seed=3)
    export = {**FEW_PAGES, "bulk_files": True}
    settings = load_settings(None, input=tmp_path / "in", output=tmp_path / "out", export=export)
    url = s3.bucket("unchanged-night")
    first = build(settings).release
    publish_release(first, url)
    before = len(s3.put_sizes(url))
    second = build(settings).release
    assert second.name != first.name
    published = publish_release(second, url)
    assert published.uploaded == 0
    written = s3.put_sizes(url)[before:]
    documents = f"{RELEASES}{published.release}/"
    assert {k for k, _ in written if not k.startswith(documents)} == {LEASE, POINTER}
    assert len(written) <= 20
    own = sum(n for k, n in written if k.startswith(documents))
    assert sum(n for _, n in written) <= 1.25 * own
    assert check_bucket(url, _builds(first, second)) == second.name


def test_the_manifest_is_in_parts_and_a_night_reads_and_writes_only_the_new_ones(
    s3: S3Server, releases: tuple[Path, Path]
) -> None:
    """Each version carries its manifest part, and the release's manifest is their list: its
    parts' rows are the local manifest.json's, after a first publish and after a second in
    which one store changed. The second writes the parts of its new versions only (that
    store's and the common pages'), no manifest of every file, and reads no part of a version
    both releases name."""
    first, second = releases
    url = s3.bucket("manifest-in-parts")
    published = publish_release(first, url)
    assert manifest_of_parts(url, published.release).equals(Manifest.load_json(first).frame)
    before = BucketReader(url).snapshot()
    assert before is not None
    puts, gets = len(s3.puts(url)), len(s3.gets(url))
    published = publish_release(second, url)
    read = s3.gets(url)[gets:]
    assert manifest_of_parts(url, published.release).equals(Manifest.load_json(second).frame)
    after = BucketReader(url).snapshot()
    assert after is not None
    written = s3.puts(url)[puts:]
    parts = sorted(k for k in written if k.endswith("/_manifest.parquet"))
    assert parts == [
        f"common/{after.common}/_manifest.parquet",
        f"stores/{CHANGED_STORE}/{after.stores[CHANGED_STORE]}/_manifest.parquet",
    ]
    mine = f"{RELEASES}{published.release}/"
    assert not [k for k in written if k.startswith(mine) and "manifest" in k and "parts" not in k]
    kept = {f"stores/{k}/{v}/" for k, v in after.stores.items() if before.stores.get(k) == v}
    assert len(kept) == 19
    assert not [k for k in read if any(k.startswith(p) for p in kept)]
