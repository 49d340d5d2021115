"""`make bench`'s distributed figures: the benchmark's input built again on a local Ray cluster
(`pipeline build --engine ray`, this machine's cores), beside the one-machine build of it.

The figures: the build's wall time and its stages (`engine` is the cluster's start-up), the
bytes of the listings' parts the engine moved from the files' tasks to the shards' (the
shuffle), each worker's peak memory (a worker runs task after task: its peak over them), and
whether the release is the one-machine build's, byte for byte."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from pipeline.export.records.report import BuildReport
from pipeline.paths import MANIFEST


def ray_build(input_dir: Path, output: Path, one_machine: Path, shards: int) -> dict[str, Any]:
    """Build `input_dir` into `output` on a local Ray cluster of `shards` shards, in a
    subprocess; its figures, and whether its manifest is the one of `one_machine` (a
    one-machine build's output of the same input)."""
    command = [sys.executable, "-m", "pipeline", "build", "--engine", "ray"]
    command += ["--shards", str(shards), "--input", str(input_dir), "--output", str(output)]
    started = time.perf_counter()
    subprocess.run(command, check=True, env={**os.environ, "RAY_USAGE_STATS_ENABLED": "0"})
    return ray_figures(output, one_machine, shards, time.perf_counter() - started)


def ray_figures(output: Path, one_machine: Path, shards: int, seconds: float) -> dict[str, Any]:
    """The figures of a Ray build's output (its report), beside a one-machine build's."""
    report = BuildReport.read(output)
    figures, stages = report.distributed, report.stages_seconds
    if figures is None:
        raise SystemExit(f"{output}: the build's report has no distributed figures")
    return {
        "ray_shards": shards,
        "ray_build_seconds": round(seconds, 2),
        "ray_engine_start_seconds": stages.get("engine"),
        "ray_stages_seconds": stages,
        "ray_shuffle_bytes": figures.shuffle_bytes,
        "ray_listings_files": figures.listings_files,
        "ray_ingest_worker_peak_rss_mb": figures.ingest_peak_rss_mb,
        "ray_shard_worker_peak_rss_mb": figures.shard_peak_rss_mb,
        "ray_shard_seconds": figures.shard_seconds,
        "ray_equals_one_machine": (
            (output / MANIFEST).read_bytes() == (one_machine / MANIFEST).read_bytes()
        ),
    }
