"""The market history's reads against the nights kept: N real nights of one input built one
after another into one output, and the history's queries timed after some of them.

    python -m bench.history_flat --input DIR [--nights 400] [--at 30,400] [--dir DIR]
    python -m bench.history_flat --compare OUTPUT [OUTPUT ...]

A night is the input with one store's listings a cent dearer than the night before (another
store each night), so that a night is a real build whose pages are mostly carried over. The
nights keep one release and write no catalog page, no filtered variant and no bulk file: the
history is what is measured, not the site. Every night is built in this process.

After each night of `--at`, on the published warehouse opened read-only, warm (each query run
once, then timed RUNS times, the median kept): the three queries of docs/analysts.md
("History across nights") and one SKU's whole history. Also: the build's seconds (the mean of
the nights since the last figures), the history's bytes on disk, its block files, and the
copies: each night's rows are in its own file and in at most one block, whose files keep the
inode they were written with (the run stops otherwise).

`--first N` goes on with the nights of `--dir` from night N (a run that stopped). Two runs at
once need two copies of the input: a night's input is hard links to it, and a new link changes
a file's ctime, which a build reads as a file changed under it.

`--compare` times the same queries on outputs built before (say one of 30 nights and one of
400), in turns, so that a busy machine weighs on each alike.
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

from bench.history import QUERIES
from pipeline.build import build
from pipeline.export.records.nights import BLOCK, BLOCK_NIGHTS
from pipeline.paths import NIGHTS, WAREHOUSE
from pipeline.progress import SILENT
from pipeline.settings import load_settings

RUNS = 9  # each query's time is the median of this many runs, after one to warm it
WHOLE_SKU = """
    SELECT build_id, low_price, high_price, listing_count
    FROM history.sku_market WHERE sku_id = $sku ORDER BY build_id"""
SETTINGS: dict[str, Any] = {
    "build": {"releases_kept": 1},
    "export": {"limits": [100], "variants": [], "catalog_operations": [], "bulk_files": False},
}


def night_input(base: Path, night: int, work: Path) -> Path:
    """A copy of `base` (hard links) whose listings of one store (the night's, in turn) are
    `night` cents dearer than in `base`."""
    target = work / f"input-{night % 2}"  # two folders in turn: the last night's is read
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(base, target, copy_function=os.link)
    for part in sorted((target / "stores" / "listings").glob("*.parquet")):
        rows = pl.read_parquet(part)
        stores = rows["storeKey"].unique().sort()
        store = stores[night % len(stores)]
        cents = pl.lit(night / 100).cast(rows.schema["price"])
        rows = rows.with_columns(
            price=pl.when(pl.col("storeKey") == store)
            .then(pl.col("price") + cents)
            .otherwise(pl.col("price"))
            .cast(rows.schema["price"])
        )
        part.unlink()  # a new file, not a write through the hard link
        rows.write_parquet(part)
    return target


def query_ms(output: Path) -> dict[str, float]:
    """The median milliseconds of each query on the published warehouse, read-only, warm."""
    con = duckdb.connect(str((output / WAREHOUSE).resolve()), read_only=True)
    try:
        [(sku,)] = con.execute(
            "SELECT sku_id FROM marts.sku_market ORDER BY listing_count DESC, sku_id LIMIT 1"
        ).fetchall()
        [(store,)] = con.execute(
            "SELECT store_key FROM marts.store ORDER BY listing_count DESC, store_key LIMIT 1"
        ).fetchall()
        params = {"sku": sku, "store": store}
        timed = {}
        for name, sql in {**QUERIES, "sku_whole_history": WHOLE_SKU}.items():
            used = {k: v for k, v in params.items() if f"${k}" in sql}
            con.execute(sql, used).fetchall()  # warm
            times = []
            for _ in range(RUNS):
                started = time.perf_counter()
                con.execute(sql, used).fetchall()
                times.append(time.perf_counter() - started)
            timed[name] = round(statistics.median(times) * 1000, 2)
        return timed
    finally:
        con.close()


def _blocks(output: Path) -> dict[Path, tuple[str, ...]]:
    root = output / NIGHTS
    return {
        f: tuple((f / BLOCK_NIGHTS).read_text().split())
        for f in root.iterdir()
        if f.name.startswith(BLOCK)
    }


def _check_copies(output: Path, seen: dict[Path, int]) -> None:
    """Each night in at most one block; a block's files keep the inode they were written with
    (`seen`: path -> inode, updated)."""
    nights = [n for block in _blocks(output).values() for n in block]
    assert len(nights) == len(set(nights)), "a night is in two blocks"
    for block in _blocks(output):
        for path in block.glob("*.parquet"):
            inode = path.stat().st_ino
            assert seen.setdefault(path, inode) == inode, f"{path}: written again"


def history_flat(
    input_dir: Path, work: Path, nights: int, at: list[int], first: int = 1
) -> dict[str, Any]:
    """Build `nights` nights into `work`/out; the figures after each night of `at`. From a
    `first` night past 1, on the nights already built there (a run that stopped)."""
    if first == 1 and work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True, exist_ok=True)
    output = work / "out"
    figures: dict[str, Any] = {"nights": nights}
    seen: dict[Path, int] = {}
    seconds: list[float] = []
    for night in range(first, nights + 1):
        settings = load_settings(
            None, input=night_input(input_dir, night, work), output=output, **SETTINGS
        )
        started = time.perf_counter()
        build(settings, SILENT)
        seconds.append(time.perf_counter() - started)
        _check_copies(output, seen)
        if night not in at:
            continue
        history = sum(p.stat().st_size for p in (output / NIGHTS).rglob("*") if p.is_file())
        key = f"night_{night}"
        figures |= {
            f"{key}_build_seconds_mean": round(statistics.mean(seconds), 2),
            f"{key}_history_bytes": history,
            f"{key}_blocks": len(_blocks(output)),
            **{f"{key}_{k}_ms": v for k, v in query_ms(output).items()},
        }
        seconds = []
        print(f"night {night}: {figures}", flush=True)
    return figures


def compare(outputs: list[Path], rounds: int = 5) -> dict[str, Any]:
    """The queries' milliseconds on each of `outputs` (built by this module), in turns, so
    that each sees the same load: the median over `rounds` of each round's median."""
    timed: dict[Path, list[dict[str, float]]] = {o: [] for o in outputs}
    for _ in range(rounds):
        for output in outputs:
            timed[output].append(query_ms(output))
    figures: dict[str, Any] = {}
    for output, runs in timed.items():
        con = duckdb.connect(str((output / WAREHOUSE).resolve()), read_only=True)
        [(nights,)] = con.execute("SELECT count(*) FROM history.nights").fetchall()
        con.close()
        for name in runs[0]:
            figures[f"{nights}_nights_{name}_ms"] = statistics.median(r[name] for r in runs)
    return figures


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(
        prog="python -m bench.history_flat",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--input", type=Path, help="the first night's input")
    parser.add_argument("--nights", type=int, default=400)
    parser.add_argument("--at", default="30,400", help="nights after which to time the queries")
    parser.add_argument("--dir", type=Path, default=Path(".bench/history-flat"))
    parser.add_argument("--first", type=int, default=1, help="go on from this night (of --dir)")
    parser.add_argument(
        "--compare",
        type=Path,
        nargs="+",
        help="time the queries on these outputs, in turns, instead of building",
    )
    args = parser.parse_args(argv)
    at = [int(n) for n in args.at.split(",")]
    if args.compare:
        figures = compare(args.compare)
    elif args.input is None:
        parser.error("--input: the first night's input, to build the nights")
    else:
        figures = history_flat(args.input, args.dir, args.nights, at, args.first)
    width = max(map(len, figures))
    for key, value in figures.items():
        print(f"{key:<{width}}  {value}")
    return figures


if __name__ == "__main__":
    main()
