"""`make bench`: the build against this machine's floors, on generated input.

    python -m bench --scale quick|full|tiny   # 1M, 10M or 20k listings

One run, one input: the scan and write floors (`bench.floors`), the full build, a rebuild after
5% of the stores changed, Ray nights straight to a test bucket (`bench.ray`), live answers
(`bench.live`) and 30 nights of market history (`bench.history`). Prints the figures and
writes them to <dir>/<scale>/results.json. Run it from a checkout that does not change
meanwhile: the code is part of every store's digest.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson
import polars as pl

from bench.floors import (
    Span,
    bulk_files_seconds,
    catalog_pages_seconds,
    scan_floor,
    write_floor,
)
from bench.live import live_latency, report
from bench.ray import bucket_nights
from bench.transfer import first_night, in_front, night_later, precompressed, rates
from pipeline.export.records.report import BuildReport
from pipeline.paths import CHANGES, CURRENT
from pipeline.tools.generate import generate

SCALES = {"tiny": (20, 20_000), "quick": (200, 1_000_000), "full": (2_000, 10_000_000)}
# Before a timing: written files reach the disk, and no inode was freed in the last minute. On
# ext4 without a journal (this disk), a new inode skips, one by one, every inode freed in the
# last 60 s (300 s while its inode table block is dirty: hence the sync), so creating files
# right after deleting a million costs 100-200 us a file instead of 8 (fs/ext4/ialloc.c,
# recently_deleted()).
SETTLE_SECONDS = 65.0
RATE_SECONDS = 5.0  # of load for each requests/s figure through nginx (`bench.transfer`)


def settle(seconds: float) -> None:
    """Flush written files and wait (see SETTLE_SECONDS)."""
    os.sync()
    time.sleep(seconds)


def _peak_rss_children_mb() -> float:
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def run_build(input_dir: Path, output: Path, *extra: str) -> tuple[Span, float, BuildReport]:
    """(its span, peak RSS MB, build report) of `pipeline build` in a subprocess."""
    before = _peak_rss_children_mb()
    with Span() as span:
        command = ["build", "--input", str(input_dir), "--output", str(output), *extra]
        subprocess.run([sys.executable, "-m", "pipeline", *command], check=True)
    peak = max(_peak_rss_children_mb(), before)
    return span, peak, BuildReport.read(output)


def change_stores(input_dir: Path, changed_dir: Path, share: float) -> int:
    """A copy of the input (hard links) where `share` of the stores changed every price."""
    if changed_dir.exists():
        shutil.rmtree(changed_dir)
    shutil.copytree(input_dir, changed_dir, copy_function=os.link)
    stores = pl.read_csv(input_dir / "stores" / "stores.csv")["storeKey"].to_list()
    picked = set(stores[:: max(1, round(1 / share))])
    for part in sorted((changed_dir / "stores" / "listings").glob("*.parquet")):
        frame = pl.read_parquet(part)
        bumped = frame.with_columns(
            price=pl.when(pl.col("storeKey").is_in(list(picked)))
            .then(pl.col("price") + pl.lit(1).cast(pl.Decimal(12, 2)))
            .otherwise(pl.col("price"))
        )
        part.unlink()  # a new file, not a write through the hard link
        bumped.write_parquet(part, compression="zstd")
    return len(picked)


class Work:
    """The benchmark's folders under `<dir>/<scale>`: the input, the input with 5% of the
    stores changed, and what each run writes."""

    def __init__(self, base: Path) -> None:
        self.base, self.input, self.changed = base, base / "input", base / "input-changed"
        self.output, self.floor_files = base / "out", base / "floor-files"
        self.ray_bucket, self.trash = base / "ray-bucket", base / "trash"

    def set_aside_last_run(self) -> None:
        """Nothing is deleted before a timing: freed blocks are discarded on this disk, and
        writing into them afterwards is several times slower. Last run's files go to the trash
        (a rename) and are deleted when this run's timings are done."""
        self.trash.mkdir(exist_ok=True)
        for stale in (self.output, self.floor_files, self.ray_bucket):
            if stale.exists():
                stale.rename(self.trash / f"{stale.name}-{time.time_ns()}")


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(
        prog="python -m bench",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--scale", choices=sorted(SCALES), default="quick")
    parser.add_argument("--dir", type=Path, default=Path(".bench"), help="work directory")
    parser.add_argument(
        "--settle", type=float, default=SETTLE_SECONDS, help="seconds to wait before a timing"
    )
    parser.add_argument(
        "--bucket-shards",
        default="1,2,4",
        help="shard counts of the Ray nights straight to a test bucket, comma-separated; '' "
        "skips them (moto writes about 300 objects a second: at quick scale, 520k files, "
        "about half an hour a night)",
    )
    parser.add_argument(
        "--history-nights",
        type=int,
        default=30,
        help="nights of the market history run (`bench.history`)",
    )
    args = parser.parse_args(argv)
    stores, listings = SCALES[args.scale]
    work = Work(args.dir / args.scale)
    if not (work.input / "stores" / "stores.csv").is_file():
        generate(work.input, stores, listings, seed=1)
    work.set_aside_last_run()
    settle(args.settle)

    results: dict[str, Any] = {"scale": args.scale, "stores": stores}
    build, live = _build_and_floors(work, args.settle)
    results |= build
    # The HTTP around the bytes (`bench.transfer`): one store's pages, this night and the next;
    # one server and one nginx for this night's figures, another pair on the next night's release.
    with in_front(work.output) as sock:
        night, transfer = first_night(work.output, sock)
        transfer |= rates(work.output, sock, RATE_SECONDS)
    transfer |= precompressed(work.output)
    results |= _rebuild(work, args.settle, build["build_seconds"])
    with in_front(work.output) as sock:
        results |= transfer | night_later(sock, night)
    # Ray nights straight to a test bucket, 1, 2 and 4 shards, the same input again (what an
    # unchanged night uploads) and a 5% night (`bench.ray`);
    # the one-machine build's peak memory beside their drivers' is `peak_rss_mb`.
    bucket_shards = tuple(int(n) for n in args.bucket_shards.split(",") if n.strip())
    if bucket_shards:
        results |= bucket_nights(work.input, work.changed, work.ray_bucket, bucket_shards)
    results |= live
    # The market history: nights of the input with 1% of the listings dearer each night; the
    # build, the bytes and the example queries of night 2 against the last (`bench.history`).
    from bench.history import history_nights

    history = work.base / "history"
    results |= history_nights(work.input, history, args.history_nights, args.settle)
    results["cores"] = os.cpu_count()
    (work.base / "results.json").write_text(json.dumps(results, indent=2))
    shutil.rmtree(work.trash)
    others = {key: value for key, value in results.items() if key not in live}
    width = max(map(len, others))
    for key, value in others.items():
        print(f"{key:<{width}}  {value}")
    print("\n".join(report(live)))  # each live figure beside its target
    return results


def _build_and_floors(work: Work, settle_seconds: float) -> tuple[dict[str, Any], dict[str, Any]]:
    """(1)-(3): the full build, and the floors it is measured against; and (6), `pipeline
    serve` answering live on the build (`bench.live`)."""
    build, peak_mb, report = run_build(work.input, work.output)
    build_s, site = build.seconds, report.site
    live = live_latency(work.output)
    catalog_s = catalog_pages_seconds(work.output, work.trash / "catalog-pages")
    bulk_s, bulk_files, bulk_bytes = bulk_files_seconds(work.output, work.trash / "bulk-files")
    settle(settle_seconds)
    written = write_floor(work.output / CURRENT, work.floor_files)
    write_s = written.seconds
    scan_s = scan_floor(work.input)
    accepted = report.tables["listings"].accepted
    figures = {
        "listings": accepted,
        "build_seconds": round(build_s, 2),
        "peak_rss_mb": round(peak_mb),
        "stages_seconds": report.stages_seconds,
        "listings_per_second": round(accepted / build_s),
        "pages": site.pages,
        "pages_per_second": round(site.pages / build_s),
        "files": site.files,
        "bytes_written": site.bytes,
        "scan_floor_seconds": round(scan_s, 2),
        "write_floor_seconds": round(write_s, 2),
        "ratio_to_floors": round(build_s / (scan_s + write_s), 2),
        # the catalog and price pages' share of the build (`export.catalog_operations`)
        "catalog_pages_seconds": round(catalog_s, 2),
        "catalog_pages_share_of_build": round(catalog_s / build_s, 3),
        # the bulk files' share (`export.bulk_files`); the floors count them with every file
        "bulk_files": bulk_files,
        "bulk_bytes": bulk_bytes,
        "bulk_files_seconds": round(bulk_s, 2),
        "bulk_files_share_of_build": round(bulk_s / build_s, 3),
        **build.figures("build"),
        **written.figures("write_floor"),
    }
    return figures, live


def _rebuild(work: Work, settle_seconds: float, build_seconds: float) -> dict[str, Any]:
    """(4): the build again, after 5% of the stores changed."""
    changed = change_stores(work.input, work.changed, 0.05)
    settle(settle_seconds)
    rebuilt, peak_mb, report = run_build(work.changed, work.output)
    changes = orjson.loads((work.output / CHANGES).read_bytes())
    return {
        "rebuild_changed_stores": changed,
        "rebuild_seconds": round(rebuilt.seconds, 2),
        "rebuild_ratio": round(rebuilt.seconds / build_seconds, 2),
        "rebuild_files_written": len(changes["changed"]),
        "rebuild_files_removed": len(changes["removed"]),
        "rebuild_files_linked": report.site.files_unchanged,
        "rebuild_stores_unchanged": report.site.stores_unchanged,
        "rebuild_peak_rss_mb": round(peak_mb),
    }


if __name__ == "__main__":
    main()
