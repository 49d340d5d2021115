"""`make bench`'s distributed figures: Ray nights (`pipeline ray-build`) on a local cluster of
this machine's cores, straight to a test bucket (moto's S3 server on this machine, started and
stopped with it), with 1, 2 and 4 shards: wall time, the driver's peak memory, the objects
written (PUTs) and their bytes, the shards' parts the driver downloaded; then, into the last
bucket, the same input again (an unchanged night: the release's own files alone), a night in
which one listing's price moves, and a night with 5% of the stores changed."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import obstore as obs
import orjson
import polars as pl

from pipeline.export.records.report import BuildReport
from pipeline.publish.bucket import POINTER, RELEASES, open_bucket

# A Ray night straight to a bucket in a driver process of its own, which prints its wall time
# and its own peak memory (the shards' are their workers').
_DRIVER = """
import json, os, resource, sys, time
from pathlib import Path
from pipeline.distributed import build_on_ray
from pipeline.settings import load_settings
started = time.perf_counter()
ray, publish = {"shards": int(sys.argv[3])}, {"to": sys.argv[4]}
paths = {"input": Path(sys.argv[1]), "output": Path(sys.argv[2])}
build_on_ray(load_settings(None, ray=ray, publish=publish, **paths))
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"seconds": time.perf_counter() - started, "driver_peak_rss_mb": peak}))
sys.stdout.flush()
os._exit(0)
"""


@contextmanager
def test_bucket_server(log: Path) -> Iterator[str]:
    """moto's S3 server on 127.0.0.1, on a port it picks itself; the AWS_* variables pointing
    at it set in this process (for its children too) while it runs. Its endpoint."""
    with log.open("w") as stderr:
        server = subprocess.Popen(
            [Path(sys.executable).parent / "moto_server", "-H", "127.0.0.1", "-p", "0"],
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
    saved = dict(os.environ)
    try:
        deadline = time.monotonic() + 60
        while not (port := re.search(r"Running on http://127\.0\.0\.1:(\d+)", log.read_text())):
            if server.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"moto_server did not start: {log.read_text()[-500:]}")
            time.sleep(0.05)
        endpoint = f"http://127.0.0.1:{port[1]}"
        os.environ.update(
            AWS_ENDPOINT_URL=endpoint,
            AWS_ALLOW_HTTP="true",
            AWS_REGION="us-east-1",
            AWS_ACCESS_KEY_ID="bench",
            AWS_SECRET_ACCESS_KEY="bench",
        )
        yield endpoint
    finally:
        os.environ.clear()
        os.environ.update(saved)
        server.terminate()
        try:  # a server holding a large bucket can take minutes to let go of it
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def _sizes(url: str, prefix: str) -> dict[str, int]:
    """key -> size of the objects under `prefix` (a release's folder): a listing of a few
    objects, never of the bucket (on the test server a listing's pages slow
    down as the bucket grows)."""
    return {m["path"]: m["size"] for batch in obs.list(open_bucket(url), prefix) for m in batch}


def _night(input_dir: Path, output: Path, url: str, shards: int) -> dict[str, Any]:
    """One night straight to `url`; its wall time, the driver's peak memory, and what it
    wrote: PUTs (every object is written once; the pointer rewritten), bytes, and the parts
    downloaded and reused. The shards' and the common pages' PUTs and bytes are the night's
    report's; the release's folder and the pointer are read from the bucket."""
    command = [sys.executable, "-c", _DRIVER, str(input_dir), str(output), str(shards), url]
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    done = subprocess.run(command, check=True, env=env, capture_output=True, text=True)
    figures: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    distributed = BuildReport.read(output).distributed
    if distributed is None or distributed.bucket is None:
        raise SystemExit(f"{output}: the night's report has no bucket figures")
    bucket = distributed.bucket
    pointer = bytes(obs.get(open_bucket(url), POINTER).bytes())
    release = _sizes(url, f"{RELEASES}{orjson.loads(pointer)['release']}/")
    return {
        "shards": shards,
        "seconds": round(figures["seconds"], 2),
        "driver_peak_rss_mb": round(figures["driver_peak_rss_mb"], 1),
        "puts": bucket.puts + len(release) + 1,  # and the pointer
        "bytes_uploaded": bucket.bytes + sum(release.values()) + len(pointer),
        "release_files_puts": len(release) + 1,
        "release_files_bytes": sum(release.values()) + len(pointer),
        "parts_bytes_downloaded": bucket.parts_downloaded_bytes,
        "shards_reused": bucket.shards_reused,
        "stores_new": bucket.stores_new,
    }


def bucket_nights(
    input_dir: Path, changed_dir: Path, base: Path, shard_counts: tuple[int, ...] = (1, 2, 4)
) -> dict[str, Any]:
    """Ray nights of `input_dir` straight to a test bucket, one bucket a shard count; then,
    into the last one, `input_dir` again (an unchanged night) and a night of `changed_dir` (5%
    of the stores changed)."""
    base.mkdir(parents=True, exist_ok=True)
    with test_bucket_server(base / "s3.log") as endpoint:
        nights: list[dict[str, Any]] = []
        for shards in shard_counts:
            name = f"bench-{shards}-{time.time_ns()}"
            request = urllib.request.Request(f"{endpoint}/{name}", method="PUT")
            urllib.request.urlopen(request, timeout=30).read()
            url = f"s3://{name}/site"
            output = base / f"ray-bucket-{shards}"
            nights.append(_night(input_dir, output, url, shards))
            print(json.dumps(nights[-1]), flush=True)  # each night's figures as they come
        unchanged = _night(input_dir, output, url, shard_counts[-1])
        print(json.dumps(unchanged), flush=True)
        one_price = _night(
            one_price_moves(input_dir, base / "input-one-price"), output, url, shard_counts[-1]
        )
        print(json.dumps(one_price), flush=True)
        changed = _night(changed_dir, output, url, shard_counts[-1])
        print(json.dumps(changed), flush=True)
    return {
        "ray_bucket_nights": nights,
        "ray_bucket_unchanged_night_puts": unchanged["puts"],
        "ray_bucket_unchanged_night_bytes": unchanged["bytes_uploaded"],
        "ray_bucket_unchanged_night_bytes_downloaded": unchanged["parts_bytes_downloaded"],
        "ray_bucket_unchanged_night_seconds": unchanged["seconds"],
        "ray_bucket_unchanged_night": unchanged,
        "ray_bucket_one_price_night": one_price,
        "ray_bucket_changed_night": changed,
    }


def one_price_moves(input_dir: Path, target: Path) -> Path:
    """A copy of the input (hard links) in which one listing's price moves: the first row of
    the first listings file costs a cent more."""
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(input_dir, target, copy_function=os.link)
    part = sorted((target / "stores" / "listings").glob("*.parquet"))[0]
    frame = pl.read_parquet(part).with_row_index()
    moved = frame.with_columns(
        price=pl.when(pl.col("index") == 0)
        .then(pl.col("price") + pl.lit(1, pl.Decimal(12, 2)) / 100)
        .otherwise(pl.col("price"))
        .cast(frame.schema["price"])
    ).drop("index")
    part.unlink()  # a new file, not a write through the hard link
    moved.write_parquet(part, compression="zstd")
    return target
