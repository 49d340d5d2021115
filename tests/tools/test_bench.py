"""The benchmark runs end to end at a tiny scale (its figures are for `make bench`, not tests)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pipeline.tools import bench
from pipeline.tools.generate import generate, store_sizes


@pytest.mark.slow
def test_the_benchmark_runs_and_reports_every_figure(tmp_path: Path) -> None:
    results = bench.main(["--scale", "tiny", "--dir", str(tmp_path), "--settle", "0"])
    for key in (
        "build_seconds",
        "peak_rss_mb",
        "listings_per_second",
        "pages_per_second",
        "bytes_written",
        "rebuild_seconds",
        "rebuild_ratio",
        "ratio_to_floors",
    ):
        assert results[key] > 0, key
    # Measured, not asserted: the floors take tens of ms (rounded to 10 ms they may read 0),
    # and CPU time comes from /proc/stat in ticks of 10 ms a core, so a span may read a tick a
    # core more or less than it used. Only that each figure is there, a number, is checked.
    for key in (
        "scan_floor_seconds",
        "write_floor_seconds",
        "merge_seconds",
        "build_cpu_seconds",
        "build_busy_cores",
        "write_floor_cpu_seconds",
        "write_floor_busy_cores",
    ):
        value = results[key]
        assert isinstance(value, int | float) and not isinstance(value, bool), key
        assert value >= 0, key
    assert results["cores"] == os.cpu_count()
    assert results["listings"] == 20_200  # 20k generic listings and 1% custom ones, none rejected
    assert 0 < results["rebuild_files_written"] < results["files"] / 4
    assert results["rebuild_files_linked"] + results["rebuild_files_written"] == results["files"]
    # Only the changed store was rebuilt; the others were linked without building a page.
    assert results["rebuild_stores_unchanged"] == 20 - results["rebuild_changed_stores"]
    assert results["merged_equals_unsharded"] is True
    # The distributed build of the same input: the same release, its listings moved once.
    assert results["ray_equals_one_machine"] is True
    assert results["ray_shuffle_bytes"] > 0
    assert results["ray_engine_start_seconds"] > 0
    assert len(results["ray_shard_worker_peak_rss_mb"]) == results["ray_shards"] == 2
    # `pipeline serve` answered live (issue 17, item 1): figures by store size, throughput.
    for size in ("smallest", "median", "largest"):
        assert results[f"live_{size}_p50_ms"] > 0 and results[f"live_{size}_p95_ms"] > 0
    assert results["live_smallest_store_listings"] <= results["live_largest_store_listings"]
    assert all(results[f"live_requests_per_second_{n}_clients"] > 0 for n in (1, 2, 4))
    assert json.loads((tmp_path / "tiny" / "results.json").read_text()) == results


def test_generate_is_deterministic_and_skewed(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    assert generate(a, 30, 5_000, seed=3) == generate(b, 30, 5_000, seed=3)
    for file in sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file()):
        assert (a / file).read_bytes() == (b / file).read_bytes(), file
    sizes = store_sizes(2_000, 10_000_000)["size"]
    assert sizes.sum() == 10_000_000
    assert 100_000 <= sizes.max() <= 200_000
    assert sizes.median() < 2_000
