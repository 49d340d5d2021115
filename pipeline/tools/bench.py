"""`make bench`: the build against the floors of this machine, on generated input.

    python -m pipeline.tools.bench --scale quick   # 1M listings / 200 stores
    python -m pipeline.tools.bench --scale full    # 10M listings / 2,000 stores
    python -m pipeline.tools.bench --scale tiny    # 20k listings / 20 stores (the tests run it)

In one run, on the same generated input: (1) the scan floor, DuckDB reading the listings and
computing per store x channel x product count and min price with no output; (2) the write
floor, the same number of files with the same sizes written from ready buffers; (3) the full
build, in a subprocess (wall time, peak RSS); (4) a rebuild after 5% of the stores changed;
(5) two shard builds and their merge, compared with the unsharded release. Over (2) and (3), how
busy the whole machine was: CPU seconds, and busy cores (CPU seconds / wall seconds). A floor
that keeps more than one core busy leaves the build less room to hide its own work beside it.
Prints the figures and ratios and writes them to <dir>/<scale>/results.json.

Run it from a checkout that does not change while it runs: a build's code is part of every
store's digest, so a rebuild by other code rebuilds every store.
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

import duckdb
import orjson
import polars as pl

from pipeline.export.files import FRAME_FILES, Body, Folders, create
from pipeline.export.manifest import Manifest
from pipeline.export.report import BuildReport
from pipeline.paths import CHANGES, CURRENT, MANIFEST
from pipeline.tools.bench_live import live_latency
from pipeline.tools.bench_ray import ray_build
from pipeline.tools.generate import generate

SCALES = {"tiny": (20, 20_000), "quick": (200, 1_000_000), "full": (2_000, 10_000_000)}
# Before a timing: written files reach the disk, and no inode was freed in the last minute. On
# ext4 without a journal (this disk), a new inode skips, one by one, every inode freed in the
# last 60 s (300 s while its inode table block is dirty: hence the sync), so creating files
# right after deleting a million costs 100-200 us a file instead of 8 (fs/ext4/ialloc.c,
# recently_deleted()).
SETTLE_SECONDS = 65.0
# After a deletion, new inodes land in the inode table blocks of the deleted ones, which makes
# those blocks dirty again: the 300 s window applies.
SETTLE_AFTER_DELETING_SECONDS = 365.0


def settle(seconds: float) -> None:
    """Flush written files and wait (see SETTLE_SECONDS)."""
    os.sync()
    time.sleep(seconds)


TICK_SECONDS = 1 / os.sysconf("SC_CLK_TCK")


def machine_cpu_seconds() -> float | None:
    """Seconds the machine's cores have been busy since boot, all of them, user and kernel,
    kernel threads included (writeback is part of writing files); None where /proc/stat is
    missing. Measured over a span, it says how much of the machine the span used: the write
    floor's kernel work, for one, runs on more than the one thread that asks for it."""
    try:
        with open("/proc/stat") as fh:
            user, nice, system, _idle, _iowait, irq, softirq = map(int, fh.readline().split()[1:8])
    except (OSError, ValueError):
        return None
    return (user + nice + system + irq + softirq) * TICK_SECONDS


class Span:
    """Wall seconds and the machine's busy CPU seconds over a `with` block. The kernel counts
    CPU time in ticks (`TICK_SECONDS` a core), so a span of a few ticks reads coarsely: a
    40 ms write floor can read 0 or 0.05 CPU seconds."""

    seconds: float = 0.0
    cpu_seconds: float | None = None

    def __enter__(self) -> Span:
        self._cpu, self._started = machine_cpu_seconds(), time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.seconds = time.perf_counter() - self._started
        cpu = machine_cpu_seconds()
        if cpu is not None and self._cpu is not None:
            self.cpu_seconds = cpu - self._cpu

    def figures(self, name: str) -> dict[str, float | None]:
        """`<name>_cpu_seconds` and `<name>_busy_cores` (CPU seconds / wall seconds)."""
        cpu = self.cpu_seconds
        return {
            f"{name}_cpu_seconds": None if cpu is None else round(cpu, 2),
            f"{name}_busy_cores": None if cpu is None else round(cpu / self.seconds, 2),
        }


def _peak_rss_children_mb() -> float:
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def scan_floor(input_dir: Path) -> float:
    """DuckDB: listings joined to SKUs, count and min per store x channel x product, no output."""
    con = duckdb.connect(config={"threads": 2, "memory_limit": "4GB"})
    started = time.perf_counter()
    con.execute(
        """
        SELECT count(*), sum(n), sum(low) FROM (
            SELECT l.storeKey, l.channelId, s.productId, count(*) AS n, min(l.price) AS low
            FROM read_parquet($listings) AS l JOIN read_parquet($skus) AS s USING (skuId)
            WHERE l.quantity > 0
            GROUP BY ALL)
        """,
        {
            "listings": str(input_dir / "stores" / "listings" / "*.parquet"),
            "skus": str(input_dir / "catalog" / "skus.parquet"),
        },
    ).fetchall()
    seconds = time.perf_counter() - started
    con.close()
    return seconds


def write_floor(release: Path, target: Path) -> Span:
    """Write files of the release's sizes, in its folders, from ready-made buffers: one thread,
    with the function the exporter's file-creating process runs (`pipeline.export.files.create`)."""
    files = Manifest.load(release).frame.select("path", "bytes")
    buffers = {size: b"x" * size for size in files["bytes"].unique().to_list()}
    folders = Folders()
    with Span() as span:
        for chunk in files.iter_slices(FRAME_FILES):
            targets = [f"{target}/{name}" for name in chunk["path"].to_list()]
            bodies: list[Body] = [buffers[size] for size in chunk["bytes"].to_list()]
            create((targets, bodies, [None] * len(targets)), folders)
    folders.close()
    return span


def site_footprint(release: Path, disk: Path) -> tuple[int, int]:
    """(inodes, bytes) that a site like the release's takes on `disk`: a file a block at least."""
    block = os.statvfs(disk).f_frsize
    sizes = Manifest.load(release).frame["bytes"]
    return len(sizes), int(((sizes + block - 1) // block * block).sum())


def fits(disk: Path, need: tuple[int, int], margin: float = 1.2) -> bool:
    """Whether `need` (inodes, bytes) fits on `disk`, with a margin."""
    stat = os.statvfs(disk)
    files, size = need
    return stat.f_favail >= margin * files and stat.f_bavail * stat.f_frsize >= margin * size


def run_build(input_dir: Path, output: Path, *extra: str) -> tuple[Span, float, BuildReport]:
    """(its span, peak RSS MB, build report) of `pipeline build` in a subprocess."""
    before = _peak_rss_children_mb()
    with Span() as span:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pipeline",
                "build",
                "--input",
                str(input_dir),
                "--output",
                str(output),
                *extra,
            ],
            check=True,
        )
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


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--scale", choices=sorted(SCALES), default="quick")
    parser.add_argument("--dir", type=Path, default=Path(".bench"), help="work directory")
    parser.add_argument(
        "--settle", type=float, default=SETTLE_SECONDS, help="seconds to wait before a timing"
    )
    args = parser.parse_args(argv)
    stores, listings = SCALES[args.scale]
    base = args.dir / args.scale
    input_dir, output = base / "input", base / "out"
    if not (input_dir / "stores" / "stores.csv").is_file():
        generate(input_dir, stores, listings, seed=1)
    # Nothing is deleted before a timing: freed blocks are discarded on this disk, and writing
    # into them afterwards is several times slower. Last run's files go to the trash (a rename)
    # and are deleted when this run's timings are done.
    trash = base / "trash"
    trash.mkdir(exist_ok=True)
    floor_files, merged = base / "floor-files", base / "merged"
    shard_outs, ray_out = [base / f"shard{index}" for index in range(2)], base / "ray"
    for stale in (output, floor_files, merged, *shard_outs, ray_out):
        if stale.exists():
            stale.rename(trash / f"{stale.name}-{time.time_ns()}")
    settle(args.settle)

    build, peak_mb, report = run_build(input_dir, output)
    build_s, site = build.seconds, report.site
    live = live_latency(output)  # (6) `pipeline serve` answering live on the build: bench_live
    settle(args.settle)
    written = write_floor(output / CURRENT, floor_files)
    write_s = written.seconds
    scan_s = scan_floor(input_dir)
    changed = change_stores(input_dir, base / "input-changed", 0.05)
    settle(args.settle)
    rebuilt, rebuild_peak_mb, rebuild = run_build(base / "input-changed", output)
    rebuild_s = rebuilt.seconds
    changes = orjson.loads((output / CHANGES).read_bytes())

    # The full scale's files use most of the disk's inodes twice over: when the shards would not
    # fit beside them, the floor's files go first, and the shards wait for their inodes.
    shards_need = site_footprint(output / CURRENT, base)
    if not fits(base, shards_need):
        shutil.rmtree(floor_files)
        settle(args.settle and SETTLE_AFTER_DELETING_SECONDS)
    if not fits(base, shards_need):
        files, size = shards_need
        raise SystemExit(
            f"{base}: the shard builds need about {files:,} inodes and {size / 2**30:.1f} GiB, "
            "more than the disk has left: free some and run the benchmark again"
        )

    # Two shards, each a build of its own, and their merge: the same release as unsharded.
    shard_seconds = [
        run_build(base / "input-changed", shard_out, "--shard", f"{index}/2")[0].seconds
        for index, shard_out in enumerate(shard_outs)
    ]
    started = time.perf_counter()
    command = [sys.executable, "-m", "pipeline", "merge", "--output", str(merged)]
    subprocess.run([*command, *map(str, shard_outs)], check=True)
    merge_s = time.perf_counter() - started
    identical = (merged / MANIFEST).read_bytes() == (output / MANIFEST).read_bytes()
    # The same input on a local Ray cluster, two shards (`bench_ray`).
    distributed = ray_build(base / "input-changed", ray_out, output, shards=2)

    accepted = report.tables["listings"].accepted
    results = {
        "scale": args.scale,
        "stores": stores,
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
        **build.figures("build"),
        **written.figures("write_floor"),
        "rebuild_changed_stores": changed,
        "rebuild_seconds": round(rebuild_s, 2),
        "rebuild_ratio": round(rebuild_s / build_s, 2),
        "rebuild_files_written": len(changes["changed"]),
        "rebuild_files_removed": len(changes["removed"]),
        "rebuild_files_linked": rebuild.site.files_unchanged,
        "rebuild_stores_unchanged": rebuild.site.stores_unchanged,
        "rebuild_peak_rss_mb": round(rebuild_peak_mb),
        "shard_build_seconds": [round(s, 2) for s in shard_seconds],
        "merge_seconds": round(merge_s, 2),
        "merged_equals_unsharded": identical,
        **distributed,
        **live,
        "cores": os.cpu_count(),
    }
    (base / "results.json").write_text(json.dumps(results, indent=2))
    shutil.rmtree(trash)
    width = max(map(len, results))
    for key, value in results.items():
        print(f"{key:<{width}}  {value}")
    return results


if __name__ == "__main__":
    main()
