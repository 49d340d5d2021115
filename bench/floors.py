"""`make bench`'s floors: what this machine's DuckDB and disk do with no build around them.

The scan floor reads the listings as the build does, with no output; the write floor writes
the release's files from ready buffers. `Span` measures a block's wall and busy CPU seconds."""

from __future__ import annotations

import os
import time
from pathlib import Path

import duckdb

from pipeline import db
from pipeline.export.files import FRAME_FILES, Body, Folders, create
from pipeline.export.pages.bulk import write_bulk_files
from pipeline.export.pages.catalog import write_catalog_pages
from pipeline.export.records.manifest import Manifest
from pipeline.export.writer import SiteWriter
from pipeline.paths import CURRENT, WAREHOUSE
from pipeline.settings import ExportSettings

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


def catalog_pages_seconds(output: Path, folder: Path) -> float:
    """Seconds the build's catalog and price pages take (`write_catalog_pages`, as the build
    writes them), written again from the published warehouse into `folder`: their share of a
    build."""
    con = db.connect(output / CURRENT / WAREHOUSE, read_only=True)
    try:
        started = time.perf_counter()
        with SiteWriter(folder) as writer:
            write_catalog_pages(con, writer, ExportSettings())
        return time.perf_counter() - started
    finally:
        con.close()


def bulk_files_seconds(output: Path, folder: Path) -> tuple[float, int, int]:
    """Seconds the build's bulk files take (`write_bulk_files`, as the build writes them),
    written again from the published warehouse into `folder`, their count and bytes: their
    share of a build. (The write floor counts them with every file of the manifest.)"""
    con = db.connect(output / CURRENT / WAREHOUSE, read_only=True)
    try:
        started = time.perf_counter()
        with SiteWriter(folder) as writer:
            count = write_bulk_files(con, writer)
        seconds = time.perf_counter() - started
        return seconds, count, int(writer.manifest().frame["bytes"].sum())
    finally:
        con.close()
