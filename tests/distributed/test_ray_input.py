"""The Ray night of an input in an object store: each listings object is downloaded by its own
task (on its worker's machine), the driver reads only the other tables, and the release is the
one-machine build's of the same files in a directory. The cluster is the session's
(`ray_cluster`, tests/distributed/conftest.py): its workers hold the test S3 server's endpoint
and credentials, so the tasks read the bucket with their own machine's settings, as a real
cluster's nodes do."""

from __future__ import annotations

import re
from pathlib import Path

import obstore as obs
import pytest
import ray

from pipeline.contract import TABLES_BY_NAME
from pipeline.distributed import build_on_ray
from pipeline.distributed.tasks import ingest_listings
from pipeline.errors import InputError
from pipeline.ingest.remote import list_input
from pipeline.remote import open_bucket
from pipeline.settings import load_settings
from tests.support.inputs import SAMPLE, write_inputs
from tests.support.nights import assert_same_build
from tests.support.s3 import S3Server, upload

pytestmark = pytest.mark.usefixtures("ray_cluster")  # the session's: its workers reach the bucket


@pytest.mark.slow
def test_a_ray_build_of_a_bucket_is_the_build_of_the_directory(
    s3: S3Server, sample_build: Path, tmp_path: Path
) -> None:
    url = f"{s3.bucket('ray-input')}/sample"
    upload(url, SAMPLE)
    output = tmp_path / "out"
    to = s3.bucket("ray-input-site")
    ray_settings = {"shards": 2, "scratch": tmp_path / "scratch"}
    publish = {"to": to}
    result = build_on_ray(
        load_settings(None, input=url, output=output, ray=ray_settings, publish=publish)
    )
    assert result.report.input == url
    assert_same_build(sample_build, output)
    # Every object was read once: the listings by their tasks, the rest by the driver.
    path = "/" + url.removeprefix("s3://")
    gets = re.findall(rf'"GET {re.escape(path)}/(\S+) HTTP/1\.1" 200', s3.log.read_text())
    files = [p for group in ("catalog", "stores") for p in (SAMPLE / group).rglob("*")]
    keys = sorted(p.relative_to(SAMPLE).as_posix() for p in files if p.is_file())
    assert sorted(gets) == keys


def test_a_bad_object_stops_the_ray_build_with_its_url(s3: S3Server, tmp_path: Path) -> None:
    """The task's handled failure is the build's line, not Ray's wrapper of it."""
    url = f"{s3.bucket('ray-bad')}/input"
    upload(url, write_inputs(tmp_path / "in", listings=[]))
    obs.put(open_bucket(url), "stores/listings.csv", b"storeKey,skuId,skuId\ns,1,1\n")
    publish = {"to": s3.bucket("ray-bad-site")}
    out = tmp_path / "out"
    settings = load_settings(None, input=url, output=out, ray={"shards": 2}, publish=publish)
    with pytest.raises(InputError) as raised:
        build_on_ray(settings)
    assert str(raised.value) == (
        f"{url}/stores/listings.csv: header: column skuId appears more than once"
    )


def test_a_task_reads_its_object_as_listed_or_not_at_all(s3: S3Server) -> None:
    """An object replaced after the driver listed it: its task, on a worker, stops."""
    url = f"{s3.bucket('ray-replaced')}/input"
    store = open_bucket(url)
    obs.put(store, "stores/listings.csv", b"storeKey,skuId,price\ns,1,1\n")
    (listed,) = list_input(url).files(TABLES_BY_NAME["listings"])
    obs.put(store, "stores/listings.csv", b"storeKey,skuId,price\ns,1,2\n")
    task = ray.remote(ingest_listings).options(num_returns=3, max_retries=0)
    read, *_ = task.remote(None, listed, {}, 2, 1000)
    with pytest.raises(ray.exceptions.RayTaskError) as raised:
        ray.get(read)
    assert isinstance(raised.value.cause, InputError)
    assert str(raised.value.cause) == (
        f"{url}/stores/listings.csv: changed while the build read it (its ETag is no longer "
        "the one listed); nothing of it was used: build again once the export is complete"
    )
