"""nginx in front of the test S3 server (`pipeline nginx-bucket`): every URL of the sample's
site answers byte for byte as local nginx serving the local release does, through the
committed release's map; a publish that moves the pointer changes nothing until the map is
written again and nginx reloaded."""

from __future__ import annotations

import getpass
import json
import shutil
import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import boto3
import pytest

from pipeline.api.urls import HELP_PATH, OPENAPI_PATH
from pipeline.build import build
from pipeline.publish.objectstore import publish_release
from pipeline.serve.reader import BucketReader, write_nginx
from pipeline.settings import load_settings
from tests.conftest import SAMPLE, run_cli
from tests.publish.conftest import S3Server, raise_prices
from tests.serve.conftest import (
    NGINX,
    materialised_targets,
    preview_server,
    request,
    running_nginx,
    wait_until_up,
)

# Besides every materialised page: spellings, parameters and stores no object answers, which
# both send to the live upstream, and paths that are errors.
OTHERS = [
    HELP_PATH,
    OPENAPI_PATH,
    "/v1.39.0/stores/3D05EF67/inventory/products",
    "/v1.39.0/stores/3d05ef67/inventory/products/?LIMIT=10&offset=0&limit=5",
    "/v1.39.0/stores/3d05ef67/inventory/products?productName=dragon",
    "/v1.39.0/stores/3d05ef67/inventory/products?offset=abc",
    "/v1.39.0/stores/nobody/inventory/products",
    "/v1.39.0/stores/3d05ef67/inventory/categories?channelId=1",
    "/v1.39.0/stores/3d05ef67/inventory/skuprices",
    "/v1.39.0/catalog/categories?sortDesc=true",
    "/v1.39.0/catalog/categories/1/groups?limit=3&offset=3",
    "/v1.39.0/catalog/products/100001,5?getExtendedFields=true",
    "/v1.39.0/pricing/sku/5000001,5000132",
    "/v1.39.0/pricing/group/0001001",
    "/v1.39.0/pricing/group/x",
    "/v1.39.0/nowhere",
    "/current/stores/3d05ef67/inventory/products",
]


@contextmanager
def nginx_on(folder: Path) -> Iterator[Path]:
    """nginx on the configuration `pipeline nginx-bucket` wrote into `folder`, on a unix
    socket there."""
    assert NGINX, "nginx is not installed: run `make system-deps` (or `make test`)"
    temp = " ".join(
        f"{name}_temp_path {folder / name};"
        for name in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    (folder / "main.conf").write_text(
        f"daemon off;\nmaster_process off;\nuser {getpass.getuser()};\npid {folder / 'nginx.pid'};\n"
        f"error_log {folder / 'error.log'} warn;\nevents {{ worker_connections 512; }}\n"
        f"http {{ access_log off; {temp} include {folder / 'nginx.conf'}; }}\n"
    )
    log = folder / "error.log"
    with log.open("ab") as stderr:
        process = subprocess.Popen(
            [NGINX, "-p", str(folder), "-c", str(folder / "main.conf"), "-e", str(log)],
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
    try:
        wait_until_up(folder / "nginx.sock", process, log)
        yield folder / "nginx.sock"
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(10)


@pytest.fixture(scope="module")
def changed_build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample with one store's prices raised, built into an output of its own."""
    tmp = tmp_path_factory.mktemp("changed")
    shutil.copytree(SAMPLE, tmp / "in")
    cellar = tmp / "in" / "stores" / "listings" / "card-cellar.csv"
    raise_prices(cellar)
    build(load_settings(None, input=tmp / "in", output=tmp / "out"))
    return tmp / "out"


def readable(s3: S3Server, url: str) -> None:
    """What a CDN's origin or a public site allows: anyone may read the pages (`stores/`,
    `common/`), not the release documents (their maps list the store keys)."""
    bucket, _, prefix = url.removeprefix("s3://").partition("/")
    policy = {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": "*",
                "Action": "s3:GetObject",
                "Resource": [f"arn:aws:s3:::{bucket}/{prefix}/{p}/*" for p in ("stores", "common")],
            }
        ],
    }
    boto3.client("s3", endpoint_url=s3.endpoint).put_bucket_policy(
        Bucket=bucket, Policy=json.dumps(policy)
    )


def test_nginx_in_front_of_the_bucket_answers_as_local_nginx_and_one_release_at_a_time(
    s3: S3Server, sample_build: Path, changed_build: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    url = s3.bucket("served")
    readable(s3, url)
    first = (sample_build / "current").resolve()
    publish_release(first, url)
    folder = tmp_path_factory.mktemp("nb")  # short: a unix socket's path has 108 bytes at most
    listen = f"unix:{folder / 'nginx.sock'}"
    materialised = [*materialised_targets(sample_build), HELP_PATH, OPENAPI_PATH]
    with (
        preview_server(sample_build) as port,
        running_nginx(
            tmp_path_factory.mktemp("local"), sample_build / "site", f"127.0.0.1:{port}"
        ) as local,
    ):
        # With no live upstream (a socket nobody listens on), every page comes from the bucket.
        no_live = f"unix:{folder / 'nobody.sock'}"
        done = run_cli(
            "nginx-bucket",
            "--to",
            url,
            "--dir",
            str(folder),
            "--listen",
            listen,
            "--upstream",
            no_live,
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith(f"{folder / 'release.map'}: release {first.name}.")
        with nginx_on(folder) as bucket:
            for target in materialised:
                a, b = request(local, target), request(bucket, target)
                assert a.status == 200, target
                assert (a.status, a.content_type, a.body) == (b.status, b.content_type, b.body), (
                    target
                )
        # With `pipeline serve` behind it, what no object answers is answered live, as locally.
        assert write_nginx(url, folder, listen, f"127.0.0.1:{port}")
        with nginx_on(folder) as bucket:
            for target in [*materialised[::5], *OTHERS]:
                a, b = request(local, target), request(bucket, target)
                assert (a.status, a.content_type, a.body) == (b.status, b.content_type, b.body), (
                    target
                )
            # The next release is committed: nginx answers the one it loaded until the map is
            # written again and nginx reloaded.
            second = (changed_build / "current").resolve()
            publish_release(second, url)
            assert BucketReader(url).snapshot().build_id == second.name  # type: ignore[union-attr]
            cellar = [t for t in materialised if "/stores/card-cellar/" in t]
            assert cellar
            old = {t: request(local, t).body for t in cellar}
            for target in cellar:
                assert request(bucket, target).body == old[target], target
        assert write_nginx(url, folder, listen, no_live)
        with nginx_on(folder) as bucket:
            site = changed_build / "site"
            for target in cellar:
                path, _, query = target.partition("?")
                file = site / (path.lstrip("/") + "/" + (query or "index") + ".json")
                assert request(bucket, target).body == file.read_bytes(), target
            assert any(request(bucket, t).body != old[t] for t in cellar)  # new prices
