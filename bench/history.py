"""The market history across nights: N nights of one input, each with 1% of its listings a
unit dearer, built one after another into one output.

    python -m bench.history --input DIR [--nights 30] [--dir .bench/history]

Prints, for night 2 and the last night: the build's seconds, the bytes it added to the output
(what `du` counts of the files that were not there before the night) and its history files'
bytes; and the seconds of the three example queries of docs/analysts.md ("History across
nights") on the warehouse after each. The earlier nights' history files must be untouched by
the later nights (same inode and mtime): the run stops otherwise.

The nights keep one release (`build.releases_kept = 1`), so that every night from the 2nd on
does the same work: it builds, publishes, and removes the release before it. With the default
of 3, nights 2 and 3 would remove none, and compare with no later night. The two timed nights
start on a settled disk, as the other timings do (`--settle`): this disk creates files slower
for minutes after a mass delete, and every night before them removed a release.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import time
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from bench.run import SETTLE_SECONDS, run_build, settle
from pipeline.export.records.nights import PARTITION
from pipeline.paths import NIGHTS, WAREHOUSE

# docs/analysts.md's three history queries, with the SKU and the store as parameters.
QUERIES = {
    "sku_low_price_30_nights": """
        SELECT row_number() OVER (ORDER BY built_at DESC) - 1 AS nights_ago,
               low_price, high_price, listing_count
        FROM history.sku_market WHERE sku_id = $sku
          AND build_id IN (SELECT build_id FROM history.nights ORDER BY build_id DESC LIMIT 30)
        ORDER BY built_at DESC""",
    "products_moved_most": """
        WITH nights AS (SELECT build_id FROM meta.build_run ORDER BY started_at DESC LIMIT 2),
        last_two AS (
            SELECT *, dense_rank() OVER (ORDER BY built_at DESC) AS night
            FROM history.product_market WHERE build_id IN (SELECT build_id FROM nights)
        )
        SELECT now.product_id, now.printing_id, before.low_price AS before,
               now.low_price AS now, now.low_price - before.low_price AS moved
        FROM last_two AS now JOIN last_two AS before USING (product_id, printing_id)
        WHERE now.night = 1 AND before.night = 2
          AND now.low_price IS DISTINCT FROM before.low_price
        ORDER BY abs(moved) DESC NULLS LAST, now.product_id, now.printing_id LIMIT 5""",
    "store_inventory_value": """
        SELECT row_number() OVER (ORDER BY built_at DESC) - 1 AS nights_ago,
               listing_count, quantity, inventory_value
        FROM history.store_volume WHERE store_key = $store ORDER BY built_at DESC""",
}
RUNS = 5  # each query's time is the median of this many runs


def night_input(base: Path, night: int, work: Path) -> Path:
    """A copy of `base` (hard links) whose listings' Parquet files have 1% of their rows (a
    different 1% each night) a unit dearer than the night before."""
    target = work / f"input-{night % 2}"  # two folders in turn: the last night's is read
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(base, target, copy_function=os.link)
    for part in sorted((target / "stores" / "listings").glob("*.parquet")):
        rows = pl.read_parquet(part).with_row_index("row")
        picked = (pl.col("row") * 7919 + night) % 100 < 1
        bumped = rows.with_columns(
            price=pl.when(picked)
            .then(pl.col("price") + pl.lit(night).cast(rows.schema["price"]))
            .otherwise(pl.col("price"))
            .cast(rows.schema["price"])
        ).drop("row")
        part.unlink()  # a new file, not a write through the hard link
        bumped.write_parquet(part)
    return target


def _files(output: Path) -> dict[int, int]:
    """inode -> bytes on disk (as du counts them) of every file under `output`."""
    found: dict[int, int] = {}
    for folder, _, names in os.walk(output):
        for name in names:
            stat = os.lstat(os.path.join(folder, name))
            found[stat.st_ino] = stat.st_blocks * 512
    return found


def _history_stats(output: Path) -> dict[str, tuple[int, int]]:
    """Each history file -> (inode, mtime in ns)."""
    return {
        str(p): (p.stat().st_ino, p.stat().st_mtime_ns)
        for p in (output / NIGHTS).rglob("*.parquet")
    }


def query_seconds(output: Path) -> dict[str, float]:
    """The median seconds of each example query on the published warehouse, read-only."""
    con = duckdb.connect(str((output / WAREHOUSE).resolve()), read_only=True)
    try:
        [(sku,)] = con.execute(
            "SELECT sku_id FROM marts.sku_market ORDER BY listing_count DESC, sku_id LIMIT 1"
        ).fetchall()
        [(store,)] = con.execute(
            "SELECT store_key FROM marts.store ORDER BY listing_count DESC, store_key LIMIT 1"
        ).fetchall()
        params = {"sku": sku, "store": store}
        seconds = {}
        for name, sql in QUERIES.items():
            used = {k: v for k, v in params.items() if f"${k}" in sql}
            times = []
            for _ in range(RUNS):
                started = time.perf_counter()
                con.execute(sql, used).fetchall()
                times.append(time.perf_counter() - started)
            seconds[name] = round(statistics.median(times), 4)
        return seconds
    finally:
        con.close()


def history_nights(
    input_dir: Path, work: Path, nights: int = 30, settle_seconds: float = SETTLE_SECONDS
) -> dict[str, Any]:
    """Build `nights` nights into `work`/out; the figures of night 2 and the last night."""
    if work.exists():
        shutil.rmtree(work)
    output = work / "out"
    work.mkdir(parents=True)
    figures: dict[str, Any] = {"history_nights": nights}
    config = work / "pipeline.toml"
    config.write_text("[build]\nreleases_kept = 1\n")
    first_files: dict[str, tuple[int, int]] = {}
    for night in range(1, nights + 1):
        night_dir = night_input(input_dir, night, work)
        before = _files(output) if output.exists() else {}
        if night in (2, nights):
            settle(settle_seconds)
        span, _, report = run_build(night_dir, output, "--config", str(config))
        if night == 1:
            first_files = _history_stats(output)
        if night not in (2, nights):
            continue
        added = {i: b for i, b in _files(output).items() if i not in before}
        folder = output / NIGHTS / f"{PARTITION}{report.build_id}"
        history = sum(f.stat().st_size for f in folder.iterdir())
        kept = _history_stats(output)
        untouched = all(kept.get(path) == stat for path, stat in first_files.items())
        assert untouched, "a later night rewrote the first night's history files"
        key = f"history_night_{night}"
        figures |= {
            f"{key}_build_seconds": round(span.seconds, 2),
            f"{key}_bytes_added": sum(added.values()),
            f"{key}_history_bytes": history,
            **{f"{key}_query_{k}_seconds": v for k, v in query_seconds(output).items()},
        }
    return figures


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(
        prog="python -m bench.history",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--input", type=Path, required=True, help="the first night's input")
    parser.add_argument("--nights", type=int, default=30)
    parser.add_argument("--dir", type=Path, default=Path(".bench/history"), help="work folder")
    parser.add_argument(
        "--settle", type=float, default=SETTLE_SECONDS, help="seconds to wait before a timing"
    )
    args = parser.parse_args(argv)
    figures = history_nights(args.input, args.dir, args.nights, args.settle)
    width = max(map(len, figures))
    for key, value in figures.items():
        print(f"{key:<{width}}  {value}")
    return figures


if __name__ == "__main__":
    main()
