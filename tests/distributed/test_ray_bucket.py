"""Ray nights straight to the test bucket (`pipeline ray-build`), on a real local Ray cluster
whose tasks share no output folder with the driver (each builds in a scratch folder of its
own): the release the pointer names is the one-machine build's, byte for byte, read URL by URL
through the pointer, and its warehouse holds the same rows, with 1, 2 and 3 shards; later
nights upload only the changed stores' versions; a killed worker, a killed driver and a stale
task attempt leave the bucket whole.

A night costs seconds, so each test is a scenario of several: the first night of a new bucket,
2 shards in one scenario and 3 in another, is checked against the one-machine build as the
night of 1 shard is (`_check_first_night`), and each scenario's later nights start from the
state its earlier ones left."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import obstore as obs
import polars as pl
import pytest
import ray

import pipeline.distributed.bucket_night as bucket_night
from pipeline import db, ingest, transform
from pipeline.build import build
from pipeline.distributed import CATALOG_TABLES, build_on_ray
from pipeline.distributed.bucket_shard import build_shard_to_bucket
from pipeline.distributed.parts import SHARD_DOC, BucketShard, records_by_shard
from pipeline.distributed.shards import Shard, shard_of
from pipeline.distributed.tasks import split_by_shard
from pipeline.errors import BuildError
from pipeline.export.records.manifest import Manifest
from pipeline.export.records.report import BucketFigures, BuildReport
from pipeline.paths import BUCKET_RELEASE, MANIFEST, MANIFEST_PARQUET, NGINX_CONF, SITE
from pipeline.paths import STORES as STORES_RECORDS
from pipeline.publish.bucket import (
    BUILDS,
    POINTER,
    RELEASES,
    STORES,
    VERSIONED_RECORDS,
    group_of,
    open_bucket,
    read_versioned_records,
)
from pipeline.publish.collect import collect
from pipeline.publish.objectstore import publish_release
from pipeline.publish.release import BuildResult
from pipeline.serve.reader import BucketReader
from pipeline.settings import Settings, load_settings
from pipeline.transform.steps import CATALOG_STEPS, STORE_TABLES
from tests.support.bucket import (
    FEW_PAGES,
    Build,
    check_bucket,
    manifest_of_parts,
    only_kept_left,
)
from tests.support.inputs import ROOT
from tests.support.local_ray import Cluster
from tests.support.nights import Nights, assert_same_build, two_nights
from tests.support.s3 import S3Server

pytestmark = pytest.mark.usefixtures("ray_cluster")  # the session's (tests/distributed/conftest.py)

CHANGED = {"store-00003"}  # 1 store of 10: 10%
# Each page is an object a night PUTs and a check GETs, so the input is small: 10 stores, at
# least 2 in every shard of 2, 3 and 4 (`shard_of`), of 4 to 14 listings each.
STORES_GENERATED, LISTINGS_GENERATED = 10, 60
# And the scenarios of several nights materialise `FEW_PAGES`: 64 files a night, not the
# defaults' 188. The night of 1 shard publishes every page the defaults materialise.


@pytest.fixture(scope="module")
def nights(tmp_path_factory: pytest.TempPathFactory) -> Nights:
    """Two small inputs and their one-machine builds: a generated one of 10 stores ("same"),
    and a copy where one store (10%, `CHANGED`) changed a price ("changed")."""
    keys = [f"store-{i:05d}" for i in range(STORES_GENERATED)]  # `generate`'s
    for count in (2, 3, 4):
        held = [sum(shard_of(k, count) == index for k in keys) for index in range(count)]
        assert min(held) >= 2, (count, held)
    return two_nights(
        tmp_path_factory, "bucket", STORES_GENERATED, LISTINGS_GENERATED, CHANGED, export=FEW_PAGES
    )


@pytest.fixture(scope="module")
def whole_site(nights: Nights, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The one-machine build of the first night's input with every page the defaults
    materialise (the bulk files and the catalog's pages among them)."""
    output = tmp_path_factory.mktemp("bucket-one-whole")
    build(load_settings(None, input=nights["same"][0], output=output))
    return output


def _night(
    inputs: Path,
    output: Path,
    url: str,
    shards: int,
    scratch: Path,
    export: dict[str, Any] = FEW_PAGES,
) -> Settings:
    """The settings of a Ray night to `url`, materialising `export` (`{}`: the defaults')."""
    ray_settings = {"shards": shards, "scratch": scratch}
    return load_settings(
        None,
        input=inputs,
        output=output,
        ray=ray_settings,
        publish={"to": url},
        export=export,
    )


def _page_puts(s3: S3Server, url: str, since: int) -> list[str]:
    """The keys of the pages PUT since the `since`th PUT (stores' and common versions)."""
    return [k for k in s3.puts(url)[since:] if k.startswith((STORES, "common/"))]


def _check_night(url: str, one_machine: Path, output: Path, scratch: Path) -> None:
    """The pointer names a release whose manifest is the one-machine build's: byte for byte
    in the output (its Parquet copy too), and in the bucket the same rows in the parts its
    list names (`manifest_of_parts`); and whose every URL, read through
    the pointer, is the one-machine site's bytes; the output's current is that release; no
    page, no site or nginx configuration (nor a link to one), no shard folder and no scratch
    is left on a disk."""
    reader = BucketReader(url)
    release = reader.snapshot()
    assert release is not None
    assert _release(output).name == release.build_id
    for name in (MANIFEST, MANIFEST_PARQUET):
        local = (output / "current" / name).read_bytes()
        assert local == (one_machine / "current" / name).read_bytes(), name
    # The release's manifest in the bucket is its versions' parts: the same rows.
    rows = Manifest.load_json(one_machine / "current").frame
    assert manifest_of_parts(url, release.release).equals(rows)
    assert check_bucket(url, {release.build_id: Build.of(_release(one_machine))}) is not None
    for name in (SITE, NGINX_CONF):
        assert not os.path.lexists(output / "current" / name), name
        assert not os.path.lexists(output / name), name
    left = [p for p in output.rglob("*") if p.is_file() and "/pages/" in str(p)]
    assert left == [] and not list((output / ".work").glob("*/shards"))
    assert list(scratch.iterdir()) == []


def _check_first_night(
    s3: S3Server, url: str, one_machine: Path, output: Path, scratch: Path, result: BuildResult
) -> None:
    """The first night to a new bucket: `_check_night`; the output's warehouse (its history
    too) is the one-machine build's, and so are the report's input digest and tables; no key
    was written twice, and each store of the release, and none other, had its pages PUT."""
    _check_night(url, one_machine, output, scratch)
    assert_same_build(one_machine, output)
    report = BuildReport.read(one_machine)
    assert result.report.inputs_digest == report.inputs_digest
    assert result.report.tables == report.tables
    release = BucketReader(url).snapshot()
    assert release is not None
    puts = s3.puts(url)
    assert len(set(puts)) == len(puts)  # no key written twice
    assert {k.split("/")[1] for k in _page_puts(s3, url, 0) if k.startswith(STORES)} == set(
        release.stores
    )


def test_a_night_straight_to_the_bucket_is_the_one_machine_build(
    s3: S3Server, nights: Nights, whole_site: Path, tmp_path: Path
) -> None:
    """A night of 1 shard, every page the defaults materialise (of 2 shards: the first night
    of `test_a_night_uploads_and_builds_only_what_changed`; of 3, the first of
    `test_a_killed_worker_a_stale_attempt_and_killed_drivers_leave_the_bucket_whole`)."""
    inputs, _ = nights["same"]
    url = s3.bucket("night-1")
    output, scratch = tmp_path / "out", tmp_path / "scratch"
    result = build_on_ray(_night(inputs, output, url, 1, scratch, export={}))
    _check_first_night(s3, url, whole_site, output, scratch, result)


def test_later_nights_upload_only_the_changed_stores_versions_and_commit_fenced(
    s3: S3Server, nights: Nights, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A one-machine `pipeline publish` first (it writes the same store records with
    versions); then a Ray night of the same input uploads no page; a night with 10% of the
    stores changed, only those stores' new versions and the common pages' (their listings move
    the marketplace's prices); and a one-machine publish of that input after it, nothing.

    Then the commit is fenced by the pointer read at the start of the night: a publish that
    commits while a night runs (after the night read the pointer): the night's commit fails in
    one line, the pointer names that publish's release, whole, and the output stays on the
    night before: its current, its releases and its history."""
    url = s3.bucket("nights")
    output, scratch = tmp_path / "out", tmp_path / "scratch"
    publish_release(_release(nights["same"][1]), url)
    uploaded: list[set[str]] = []
    for name in ("same", "changed"):
        inputs, one_machine = nights[name]
        before = len(s3.puts(url))
        build_on_ray(_night(inputs, output, url, 2, scratch))
        _check_night(url, one_machine, output, scratch)
        uploaded.append({k.split("/")[1] for k in _page_puts(s3, url, before)})
        common = BucketReader(url).snapshot().common  # type: ignore[union-attr]
    assert uploaded == [set(), {*CHANGED, common}]
    assert _bucket_figures(output).stores_new == len(CHANGED)
    before = len(s3.puts(url))
    # The one-machine release was built before the nights: older, so asked.
    published = publish_release(_release(nights["changed"][1]), url, allow_older=True)
    assert published.uploaded == 0 and _page_puts(s3, url, before) == []

    # The fence. The night starts on the one-machine release just published, and its output on
    # the night before; the other publish is of the "same" one-machine build, older, so asked.
    current_before, releases_before = _release(output), _releases(output)
    runs_before = _build_runs(output)
    other = BucketReader(url).snapshot()
    assert other is not None and other.build_id == _release(nights["changed"][1]).name
    commit = bucket_night.commit_night

    def another_publish_first(*args: Any, **kwargs: Any) -> list[str]:
        publish_release(_release(nights["same"][1]), url, allow_older=True)
        return commit(*args, **kwargs)

    monkeypatch.setattr(bucket_night, "commit_night", another_publish_first)
    with pytest.raises(BuildError, match=r"another publish wrote current\.json") as failed:
        build_on_ray(_night(nights["changed"][0], output, url, 2, scratch))
    line = str(failed.value)
    assert "\n" not in line and line.endswith("(nor to the output: its current is unchanged)")
    current = BucketReader(url).snapshot()
    assert current is not None and current.release != other.release
    build = Build.of(_release(nights["same"][1]))
    assert check_bucket(url, {current.build_id: build}) == current.build_id
    assert _release(output) == current_before
    assert _releases(output) == releases_before
    assert _build_runs(output) == runs_before


def _releases(output: Path) -> list[str]:
    return sorted(r.name for r in (output / "releases").iterdir())


def test_a_night_uploads_and_builds_only_what_changed(
    s3: S3Server, nights: Nights, tmp_path: Path
) -> None:
    """A Ray night of 2 shards to a new bucket: the one-machine build (`_check_first_night`).
    Then the same input again: the second runs no shard task and writes only the release's
    own files (under its `releases/` folder) and the pointer: no page, no shard part; its
    release names the first's parts again. Then a night with one store changed: only that
    store's shard runs, and it uploads its parts and that store's version (and the common
    pages': the store's listings move the marketplace's prices); the other shard's parts are
    named again, and a collection keeps them. Then 4 shards instead of 2: no part is of the
    same shard, every shard runs, and every store is still carried (no page). Each release is
    the one-machine build's."""
    url = s3.bucket("moves")
    output, scratch = tmp_path / "out", tmp_path / "scratch"
    inputs, one_machine = nights["same"]
    result = build_on_ray(_night(inputs, output, url, 2, scratch))
    _check_first_night(s3, url, one_machine, output, scratch, result)
    first = BucketReader(url).snapshot()
    assert first is not None and len(first.shard_parts) == 2

    before, gets = len(s3.puts(url)), len(s3.gets(url))
    build_on_ray(_night(inputs, output, url, 2, scratch))
    read = s3.gets(url)[gets:]
    _check_night(url, one_machine, output, scratch)
    second = BucketReader(url).snapshot()
    assert second is not None and second.release != first.release
    written = s3.puts(url)[before:]
    assert [k for k in written if not k.startswith(f"{RELEASES}{second.release}/")] == [POINTER]
    assert second.shard_parts == first.shard_parts
    assert second.stores == first.stores and second.common == first.common
    bucket = _bucket_figures(output)
    assert (bucket.puts, bucket.bytes, bucket.stores_new, bucket.shards_reused) == (0, 0, 0, 2)
    # The driver read each shard's document, and no shard table and no manifest row: the
    # warehouse's rows of the reused shards are the output's own, kept from the night before.
    assert bucket.parts_downloaded_bytes == 0
    assert sorted(k for k in read if k.startswith(BUILDS)) == sorted(
        p + SHARD_DOC for p in first.shard_parts
    )
    assert not [k for k in read if "manifest" in k]

    changed_inputs, changed = nights["changed"]
    (store,) = CHANGED
    index = shard_of(store, 2)
    before, gets = len(s3.puts(url)), len(s3.gets(url))
    build_on_ray(_night(changed_inputs, output, url, 2, scratch))
    read = s3.gets(url)[gets:]
    _check_night(url, changed, output, scratch)
    third = BucketReader(url).snapshot()
    assert third is not None
    # The driver downloaded the tables of the shard that ran, and nothing of the other.
    tables = {k for k in read if k.startswith(BUILDS) and not k.endswith(SHARD_DOC)}
    assert tables and {group_of(k) for k in tables} == {third.shard_parts[index]}
    assert not [k for k in read if "manifest" in k and not k.startswith(BUILDS)]
    written = s3.puts(url)[before:]
    groups = {group_of(k) for k in written} - {None}
    assert groups == {
        third.shard_parts[index],
        f"{STORES}{store}/{third.stores[store]}/",
        f"common/{third.common}/",
        f"{RELEASES}{third.release}/",
    }
    assert third.shard_parts[index].startswith(f"{BUILDS}{third.release}/shard-{index}-")
    assert third.shard_parts[1 - index] == first.shard_parts[1 - index]
    bucket = _bucket_figures(output)
    assert (bucket.stores_new, bucket.shards_reused) == (1, 1)
    collect(url, keep=1, grace=0)
    only_kept_left(url, 1)  # the first night's parts of the other shard among them
    _check_night(url, changed, output, scratch)

    before = len(s3.puts(url))
    build_on_ray(_night(changed_inputs, output, url, 4, scratch))
    _check_night(url, changed, output, scratch)
    fourth = BucketReader(url).snapshot()
    assert fourth is not None and len(fourth.shard_parts) == 4
    assert set(fourth.shard_parts).isdisjoint(third.shard_parts)
    assert _page_puts(s3, url, before) == [] and fourth.stores == third.stores
    assert _bucket_figures(output).shards_reused == 0


def test_an_unchanged_night_at_another_hour_uploads_only_the_release_documents(
    s3: S3Server, nights: Nights, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two Ray nights of one input, hours apart (no SOURCE_DATE_EPOCH), the bulk files among
    the common pages: the second keeps the bulk files' index, so the common version, and
    writes only its release's documents and the pointer: at most 20 PUTs, and at most a
    quarter more bytes than those documents."""
    monkeypatch.delenv("SOURCE_DATE_EPOCH")
    url = s3.bucket("unchanged-hours")
    output, scratch = tmp_path / "out", tmp_path / "scratch"
    inputs, _ = nights["same"]
    export = {**FEW_PAGES, "bulk_files": True}
    build_on_ray(_night(inputs, output, url, 2, scratch, export=export))
    first = BucketReader(url).snapshot()
    assert first is not None
    before = len(s3.put_sizes(url))
    build_on_ray(_night(inputs, output, url, 2, scratch, export=export))
    second = BucketReader(url).snapshot()
    assert second is not None and second.build_id != first.build_id
    assert second.common == first.common and second.stores == first.stores
    written = s3.put_sizes(url)[before:]
    documents = f"{RELEASES}{second.release}/"
    assert [k for k, _ in written if not k.startswith(documents)] == [POINTER]
    assert _bucket_figures(output).parts_downloaded_bytes == 0  # no shard table
    assert len(written) <= 20
    own = sum(n for k, n in written if k.startswith(documents))
    assert sum(n for _, n in written) <= 1.25 * own


def _bucket_figures(output: Path) -> BucketFigures:
    figures = BuildReport.read(output).distributed
    assert figures is not None and figures.bucket is not None
    return figures.bucket


@pytest.mark.slow
def test_a_killed_worker_a_stale_attempt_and_killed_drivers_leave_the_bucket_whole(
    ray_cluster: Cluster, s3: S3Server, nights: Nights, tmp_path: Path
) -> None:
    """A Ray night of 3 shards to a new bucket, a shard's worker killed in the middle: its task
    runs again, and the night is the one-machine build (`_check_first_night`). Then a stale
    attempt of that night's shard (`_check_stale_attempts`) writes only keys no commit names.
    Then a driver killed after its shards uploaded, before its commit: the pointer still
    names the first night. Then a driver killed right after the bucket's commit, before its
    local swap: the bucket names its release, the output still the night before (never ahead
    of the bucket), with the killed night's release waiting; the next night to that bucket
    publishes it to the output first, says so, and follows it (the history lists it); it is
    the one-machine build, and a collection past the grace period removes what the killed
    drivers left."""
    url = s3.bucket("killed")
    output, scratch = tmp_path / "out", tmp_path / "scratch"
    inputs, one_machine = nights["same"]
    shards = 3  # all its nights: the killed drivers' run the changed store's shard alone
    settings = _night(inputs, output, url, shards, scratch)
    ray_cluster.kill_a_shard.touch()
    try:
        result = build_on_ray(settings)
        assert not ray_cluster.kill_a_shard.exists()  # a worker was killed, its shard run again
    finally:  # never left armed for the session's later nights
        ray_cluster.kill_a_shard.unlink(missing_ok=True)
    _check_first_night(s3, url, one_machine, output, scratch, result)
    first = BucketReader(url).snapshot()
    assert first is not None and first.build_id == _release(output).name
    _check_stale_attempts(s3, settings, inputs, one_machine)

    changed_inputs, changed = nights["changed"]
    killed_out = tmp_path / "killed-out"
    driver = _killed_night(url, scratch, changed_inputs, killed_out, shards, after=False)
    assert driver.returncode == -9, driver.stderr[-2000:]
    after_kill = BucketReader(url).snapshot()
    assert after_kill is not None and after_kill.release == first.release
    assert any(k.startswith(BUILDS) and group_of(k) not in first.prefixes() for k in _keys(url))
    assert check_bucket(url, {first.build_id: Build.of(_release(one_machine))})

    before = _release(output)
    driver = _killed_night(url, scratch, changed_inputs, output, shards, after=True)
    assert driver.returncode == -9, driver.stderr[-2000:]
    killed = BucketReader(url).snapshot()
    assert killed is not None and killed.build_id != before.name
    assert _release(output) == before  # behind the bucket, never ahead
    waiting = output / "releases" / killed.build_id
    assert (waiting / BUCKET_RELEASE).is_file()

    result = build_on_ray(_night(changed_inputs, output, url, shards, scratch))
    _check_night(url, changed, output, scratch)
    assert _build_runs(output) == [before.name, killed.build_id, result.build_id]
    said = [w for w in result.report.build_warnings if str(waiting) in w]
    assert said and said[0].endswith("published to the output now"), said
    collect(url, keep=1, grace=0)
    only_kept_left(url, 1)
    _check_night(url, changed, output, scratch)


def _release(output: Path) -> Path:
    return (output / "current").resolve()


def _keys(url: str) -> list[str]:
    return [m["path"] for batch in obs.list(open_bucket(url)) for m in batch]


def _check_stale_attempts(
    s3: S3Server, settings: Settings, inputs: Path, one_machine: Path
) -> None:
    """After a committed night, its shard 0 run again by hand, outside Ray, as an attempt of
    that night (a partitioned node waking up after its retry): it writes new versions and parts
    under its own attempt's keys only; the pointer reads right, and a collection past the
    grace period removes them while keeping the committed release's parts. Then stores whose
    digest changed but whose pages did not (new code, say): rendered again, they keep their
    versions, and the attempt writes its parts only; a collection removes them too."""
    url, shards = settings.publish.to, settings.ray.shards
    assert url is not None
    committed = BucketReader(url).snapshot()
    assert committed is not None
    named = committed.prefixes()
    assert {group_of(p + "x") for p in committed.shard_parts} <= named

    con = db.connect()
    db.create_schemas(con)
    ingest.ingest_all(con, inputs)
    transform.run_steps(con, steps=CATALOG_STEPS)
    catalog = {t: con.sql(f"SELECT * FROM {t}").to_arrow_table() for t in CATALOG_TABLES}
    stores = {
        f"raw.{t}": split_by_shard(con, f"raw.{t}", shards)[0]
        for t in STORE_TABLES
        if t != "listings"
    }
    listings = split_by_shard(con, "raw.listings", shards)[0]
    con.close()
    token = committed.release.rpartition(".")[2]
    start = pl.DataFrame(schema=VERSIONED_RECORDS).to_arrow()  # the night's start: no release
    job = BucketShard(url, committed.release, token, start, "stale")
    before = len(s3.puts(url))
    stale = build_shard_to_bucket(settings, Shard(0, shards), job, catalog, stores, listings)
    written = s3.puts(url)[before:]
    assert stale.stores_new > 0 and len(written) == stale.puts
    assert all(group_of(k) not in named for k in written), written
    assert check_bucket(url, {committed.build_id: Build.of(_release(one_machine))})
    collect(url, keep=1, grace=0)
    only_kept_left(url, 1)
    assert not any(group_of(k) == group_of(written[0]) for k in _keys(url))
    assert check_bucket(url, {committed.build_id: Build.of(_release(one_machine))})

    # Stores whose digest changed but whose pages did not (new code, say) are rendered again
    # and keep their versions: the attempt writes its parts only.
    records = obs.get(open_bucket(url), f"{RELEASES}{committed.release}/{STORES_RECORDS}")
    start = read_versioned_records(bytes(records.bytes()))
    start = start.with_columns(digest=pl.lit(b"other", pl.Binary))
    mine = records_by_shard(start, shards)[0]
    job = BucketShard(url, committed.release, token, mine, "stale")
    before = len(s3.puts(url))
    again = build_shard_to_bucket(settings, Shard(0, shards), job, catalog, stores, listings)
    assert again.stores_new == 0 and again.counts["stores_unchanged"] == 0
    written = s3.puts(url)[before:]
    assert written and all(k.startswith(BUILDS) for k in written)
    collect(url, keep=1, grace=0)
    only_kept_left(url, 1)  # and none of the parts written left for the killed drivers below
    assert check_bucket(url, {committed.build_id: Build.of(_release(one_machine))})


def _build_runs(output: Path) -> list[str]:
    """The builds `meta.build_run` of the output's current warehouse lists, oldest first."""
    con = db.connect(output / "current" / "warehouse.duckdb", read_only=True)
    try:
        rows = con.execute("SELECT build_id FROM meta.build_run ORDER BY started_at").fetchall()
    finally:
        con.close()
    return [r[0] for r in rows]


def _killed_night(
    url: str, scratch: Path, inputs: Path, output: Path, shards: int, *, after: bool
) -> subprocess.CompletedProcess[str]:
    """A night of `inputs` on the test cluster, its driver (a process of its own) SIGKILLed at
    its commit: before the pointer is written, or right `after` the bucket's commit (before its
    local swap)."""
    address = ray.get_runtime_context().gcs_address
    kill = "os.kill(os.getpid(), signal.SIGKILL)"
    script = (
        "import os, signal\n"
        "import pipeline.distributed as d\n"
        "import pipeline.distributed.bucket_night as n\n"
        "from pipeline.settings import load_settings\n"
        "commit = n.commit_night\n"
        "def killed(*args, **kwargs):\n"
        + ("    commit(*args, **kwargs)\n" if after else "")
        + f"    {kill}\n"
        "n.commit_night = killed\n"
        f"ray = {{'shards': {shards}, 'scratch': {str(scratch)!r}, 'address': {address!r}}}\n"
        f"d.build_on_ray(load_settings(None, input={str(inputs)!r}, "
        f"output={str(output)!r}, ray=ray, publish={{'to': {url!r}}}, export={FEW_PAGES!r}))\n"
    )
    return subprocess.run(
        [sys.executable, "-c", script],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=300,
    )
