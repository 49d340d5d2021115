"""The benchmark runs end to end at a tiny scale (its figures are for `make bench`, not tests)."""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from typing import Any

import pytest

from bench import history as bench_history
from bench import live as bench_live
from bench import run as bench
from bench import transfer as bench_transfer
from bench.floors import Span
from bench.live import live_latency
from pipeline.build import build
from pipeline.export.records.report import BuildReport
from pipeline.paths import CURRENT
from pipeline.settings import load_settings


@pytest.mark.slow
def test_the_benchmark_runs_every_stage_and_reports_its_figures(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A smoke test, at a scale smaller than tiny: the figures are for `make bench`, and what
    the benchmark compares (the Ray nights, the rebuild) is tested where it is made."""
    monkeypatch.setitem(bench.SCALES, "tiny", (4, 400))
    # No rate waits: each of its clients asks once (`bench.servers.throughput`).
    monkeypatch.setattr(bench, "RATE_SECONDS", 0)
    # One spelling of each live answer, not 40, and 2 pages of each order, not 10: 12 requests
    # through nginx twice, not 2,400.
    monkeypatch.setattr(bench_transfer, "SPELLINGS", range(1))
    monkeypatch.setattr(bench_transfer, "PAGES", 2)
    # Likewise each live latency figure: one request of 2 pages or products, not 200 of 10 or 20.
    monkeypatch.setattr(bench_live, "PAGES", 2)
    monkeypatch.setattr(bench_live, "PRODUCTS", 2)
    monkeypatch.setattr(bench, "live_latency", functools.partial(live_latency, count=1, seconds=0))
    monkeypatch.setattr(bench_history, "RUNS", 1)  # each history query once, not 5 times

    def in_process(input_dir: Path, output: Path, *extra: str) -> tuple[Span, float, BuildReport]:
        """`run_build` in this process: a `pipeline build` process imports the pipeline again
        (0.8 s of CPU)."""
        assert extra[:1] in ((), ("--config",)), extra  # the history's nights: `--config FILE`
        config = Path(extra[1]) if extra else None
        with Span() as span:
            build(load_settings(config, input=input_dir, output=output))
        return span, 0.0, BuildReport.read(output)

    first = bench.run_build

    def run_build(input_dir: Path, output: Path, *extra: str) -> tuple[Span, float, BuildReport]:
        """The first build as `make bench` runs it, a process; the rebuild into its output in
        this process."""
        built = (output / CURRENT).is_symlink()
        return (in_process if built else first)(input_dir, output, *extra)

    monkeypatch.setattr(bench, "run_build", run_build)
    monkeypatch.setattr(bench_history, "run_build", in_process)  # every night in this process
    work = tmp_path / "tiny"

    def bucket_nights(
        input_dir: Path, changed_dir: Path, base: Path, shards: tuple[int, ...]
    ) -> dict[str, Any]:
        """Likewise: the nights straight to a bucket are tested in test_ray_bucket.py."""
        assert (input_dir, changed_dir, base, shards) == (
            work / "input",
            work / "input-changed",
            work / "ray-bucket",
            (1, 2, 4),
        )
        return {"ray_bucket_nights": []}

    monkeypatch.setattr(bench, "bucket_nights", bucket_nights)
    argv = ["--scale", "tiny", "--dir", str(tmp_path), "--settle", "0", "--history-nights", "2"]
    results = bench.main(argv)
    assert json.loads((work / "results.json").read_text()) == results
    numbers = {k: v for k, v in results.items() if not isinstance(v, str | bool | list | dict)}
    assert all(isinstance(v, int | float) and v >= 0 for v in numbers.values()), numbers
    assert results["listings"] == 404  # 400 generic listings and 1% custom ones
    assert results["rebuild_files_linked"] + results["rebuild_files_written"] == results["files"]
    live = {"live_smallest_p50_ms", "live_requests_per_second_4_clients", "live_serve_rss_mb"}
    assert {*live, "live_nginx_requests_per_second_16_clients", "cores"} <= set(results)
    assert results["history_night_2_history_bytes"] > 0
    assert "history_night_2_query_products_moved_most_seconds" in results


def test_the_live_figures_run_on_an_existing_build_beside_their_targets(
    sample_build: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`python -m bench.live --output DIR`: no rebuild; every live figure with a target is
    printed with its bound and whether it was met."""
    figures = bench_live.main(["--output", str(sample_build), "--count", "2", "--seconds", "0.05"])
    printed = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()}
    assert set(printed) == set(figures)
    for name in bench_live.TARGETS:
        assert re.search(r"(<=|>=) [0-9.]+  (ok|MISSED)$", printed[name]), printed[name]
    assert re.search(r"<= 6  (ok|MISSED)$", printed["live_smallest_p95_ms"])
    assert re.search(r"<= 3  (ok|MISSED)$", printed["live_uncached_smallest_p50_ms"])
    assert figures["live_uncached_serve_cpu_ms_per_request_4_clients"] > 0
    assert figures["live_requests_per_second_4_clients"] > 0
    assert figures["live_nginx_requests_per_second_4_clients"] > 0
    assert 0 < figures["live_serve_rss_mb"] <= figures["live_serve_peak_rss_mb"]
