"""The market history gathered into blocks of nights: each night written once, then copied once
into its block by the build that closes the block, never again; the views made without
reading a file a night kept; and every kept release's history readable whatever the settings
of the builds after it."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import duckdb
import pytest

from pipeline.build import build
from pipeline.export.records.nights import night_file
from pipeline.paths import NIGHTS, RELEASES, WAREHOUSE
from pipeline.publish.release import BuildResult
from pipeline.settings import load_settings
from pipeline.transform.steps import NIGHT_TABLES
from tests.support.inputs import write_inputs

TABLES = [t.name for t in NIGHT_TABLES]
# Three nights of two stores: S1's sku 1000 at 1.00, then 0.90, then 0.80.
NIGHTS_LISTINGS = [
    [
        {"storeKey": "S1", "skuId": 1000, "price": price, "quantity": 2},
        {"storeKey": "S2", "skuId": 1010, "price": "5.00", "quantity": 1},
    ]
    for price in ("1.00", "0.90", "0.80")
]
# The rows a night has in each view: the base catalog's three SKUs (tests/support/inputs.py),
# and the two stores.
ROWS_A_NIGHT = {"sku_market": 3, "store_volume": 2}


def _night(
    tmp_path: Path, night: int, output: Path | None = None, **build_settings: Any
) -> BuildResult:
    inputs = write_inputs(tmp_path / f"in{night % 3}", listings=NIGHTS_LISTINGS[night % 3])
    output = tmp_path / "out" if output is None else output
    return build(load_settings(None, input=inputs, output=output, build=build_settings))


def _rows(warehouse: Path, sql: str) -> list[tuple[Any, ...]]:
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def _history_files(output: Path) -> dict[str, tuple[int, int]]:
    """Every Parquet file under history/, by its path there -> (inode, mtime)."""
    root = output / NIGHTS
    return {
        str(p.relative_to(root)): (p.stat().st_ino, p.stat().st_mtime_ns)
        for p in root.rglob("*.parquet")
    }


def _nights_in(path: Path) -> list[str]:
    con = duckdb.connect()
    try:
        query = "SELECT DISTINCT build_id FROM read_parquet($p) ORDER BY 1"
        return [r[0] for r in con.execute(query, {"p": str(path)}).fetchall()]
    finally:
        con.close()


def test_each_night_is_written_once_and_copied_once_into_its_block(tmp_path: Path) -> None:
    """Blocks of 2 nights, 7 nights: two blocks close. Every history file, once written, keeps
    its inode and mtime; a night's rows are in its own file and in at most one block; the
    views list each night once, its rows once."""
    output = tmp_path / "out"
    ids: list[str] = []
    seen: dict[str, tuple[int, int]] = {}
    for night in range(7):
        ids.append(_night(tmp_path, night, history_block_nights=2).build_id)
        files = _history_files(output)
        # No file is ever written twice: each keeps the inode and mtime it was written with.
        assert {p: s for p, s in files.items() if p in seen} == {
            p: s for p, s in seen.items() if p in files
        }
        seen |= files
    night_files = {p for p in seen if p.startswith("build_id=")}
    assert night_files == {f"build_id={i}/{t}.parquet" for i in ids for t in TABLES}
    blocks = sorted(p for p in seen if p not in night_files)
    copies: Counter[str] = Counter()
    for table in TABLES:
        of_table = [p for p in blocks if p.endswith(f"/{table}.parquet")]
        gathered = [_nights_in(output / NIGHTS / p) for p in of_table]
        # Two blocks of two nights each: the oldest four nights, each copied once.
        assert sorted(gathered) == [ids[0:2], ids[2:4]], table
        copies.update(n for block in gathered for n in block)
    assert copies == Counter({n: len(TABLES) for n in ids[:4]})
    warehouse = output / WAREHOUSE
    for table, count in ROWS_A_NIGHT.items():
        assert _rows(
            warehouse, f"SELECT build_id, count(*) FROM history.{table} GROUP BY 1 ORDER BY 1"
        ) == [(i, count) for i in ids]
    # The views read the blocks: the gathered nights' own files that a kept release still
    # lists made unreadable (those no kept release lists are gone).
    left = [night_file(output, t, n) for n in ids[:4] for t in TABLES]
    assert [f.exists() for f in left] == [n in ids[2:4] for n in ids[:4] for _ in TABLES]
    for path in left[2 * len(TABLES) :]:
        path.write_bytes(b"PAR1 not Parquet PAR1")
    assert _rows(
        warehouse,
        "SELECT build_id, low_price::varchar FROM history.sku_market WHERE sku_id = 1000 "
        "ORDER BY build_id",
    ) == [(i, ["1.00", "0.90", "0.80"][n % 3]) for n, i in enumerate(ids)]
    # Five nights listed: the second block holds one night no longer listed, read apart.
    ids.append(_night(tmp_path, 7, history_nights=5, history_block_nights=2).build_id)
    for table, count in ROWS_A_NIGHT.items():
        assert _rows(
            warehouse, f"SELECT build_id, count(*) FROM history.{table} GROUP BY 1 ORDER BY 1"
        ) == [(i, count) for i in ids[3:]]


def test_the_views_are_made_without_reading_a_file_a_night(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The second night's files made unreadable before the fourth build: the views are made
    all the same (DuckDB binds a view by its first file; no other night's file is opened),
    and read it once it is back. The output is given by a relative path."""
    monkeypatch.chdir(tmp_path)
    ids = [_night(tmp_path, n, Path("out")).build_id for n in range(3)]
    output = tmp_path / "out"
    kept = {}
    for table in TABLES:
        path = night_file(output, table, ids[1])
        kept[path] = tmp_path / f"{table}.kept"
        path.rename(kept[path])
        path.write_bytes(b"PAR1 not Parquet PAR1")
    ids.append(_night(tmp_path, 3, Path("out")).build_id)
    for path, aside in kept.items():
        aside.replace(path)
    assert _rows(
        output / WAREHOUSE,
        "SELECT build_id, count(*) FROM history.sku_market GROUP BY 1 ORDER BY 1",
    ) == [(n, 3) for n in ids]


def test_lowering_history_nights_keeps_every_kept_release_readable(tmp_path: Path) -> None:
    """Three nights with the defaults (3 releases kept), then one with history_nights 1: the
    two releases kept before it still read every night they list, in every view."""
    ids = [_night(tmp_path, n).build_id for n in range(3)]
    ids.append(_night(tmp_path, 3, history_nights=1).build_id)
    output = tmp_path / "out"
    listed = {}
    for release in sorted((output / RELEASES).iterdir()):
        warehouse = release / WAREHOUSE
        nights = [r[0] for r in _rows(warehouse, "SELECT build_id FROM history.nights ORDER BY 1")]
        for table in TABLES:
            counted = _rows(
                warehouse,
                f"SELECT build_id, count(*) > 0 FROM history.{table} GROUP BY 1 ORDER BY 1",
            )
            assert counted == [(n, True) for n in nights], (release.name, table)
        listed[release.name] = nights
    assert listed == {ids[1]: ids[:2], ids[2]: ids[:3], ids[3]: ids[3:]}
    # A night's files go once no kept release lists it: two nights later, the three releases
    # kept list only their own night each.
    later = [_night(tmp_path, n, history_nights=1).build_id for n in (4, 5)]
    kept = {p.split("/")[0] for p in _history_files(output)}
    assert kept == {f"build_id={n}" for n in [ids[3], *later]}
