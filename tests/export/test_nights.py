"""The market history across nights (history.*): exact rows over several nights, each night's
files written once and never copied, the views listing exactly the published nights, and no
night lost to a failed build, a damaged release or a state-format upgrade."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import pytest

from pipeline.build import build
from pipeline.errors import BuildError
from pipeline.export.records.nights import night_file
from pipeline.paths import CURRENT, FORMAT, HISTORY, NIGHTS, WAREHOUSE
from pipeline.publish.release import BuildResult
from pipeline.settings import load_settings
from pipeline.transform.steps import NIGHT_TABLES
from tests.support.damage import flip_a_bit
from tests.support.inputs import write_inputs

TABLES = [t.name for t in NIGHT_TABLES]


def _listing(store: str, sku: int, price: str, quantity: int) -> dict[str, Any]:
    return {"storeKey": store, "skuId": sku, "price": price, "quantity": quantity}


# Three nights: s1's sku 1000 falls from 1.00 to 0.90, then s2's rises from 1.50 to 2.00 (x3).
NIGHTS_LISTINGS = [
    [
        _listing("S1", 1000, "1.00", 2),
        _listing("S1", 1010, "5.00", 1),
        _listing("S2", 1000, "1.50", 1),
    ],
    [
        _listing("S1", 1000, "0.90", 2),
        _listing("S1", 1010, "5.00", 1),
        _listing("S2", 1000, "1.50", 1),
    ],
    [
        _listing("S1", 1000, "0.90", 2),
        _listing("S1", 1010, "5.00", 1),
        _listing("S2", 1000, "2.00", 3),
    ],
]


def _night(tmp_path: Path, night: int, **settings: Any) -> BuildResult:
    """Night `night` (0-based) of NIGHTS_LISTINGS built into tmp_path/out."""
    inputs = write_inputs(tmp_path / f"in{night}", listings=NIGHTS_LISTINGS[night])
    return build(load_settings(None, input=inputs, output=tmp_path / "out", **settings))


def _rows(output: Path, sql: str) -> list[tuple[Any, ...]]:
    """`sql` on the published warehouse, opened read-only from another working directory."""
    con = duckdb.connect(str((output / WAREHOUSE).resolve()), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def _listed(output: Path) -> dict[str, list[str]]:
    """table -> the nights its view lists, in order; history.nights lists the same."""
    listed = {
        t: [r[0] for r in _rows(output, f"SELECT DISTINCT build_id FROM history.{t} ORDER BY 1")]
        for t in TABLES
    }
    nights = [r[0] for r in _rows(output, "SELECT build_id FROM history.nights ORDER BY 1")]
    assert all(ids == nights for ids in listed.values())
    return listed


def _files(output: Path) -> dict[str, list[str]]:
    """table -> every file of it under history/ (hidden ones included), by its path there."""
    root = output / NIGHTS
    files = [p.relative_to(root) for p in root.rglob("*") if p.is_file()]
    return {
        t: sorted(str(f) for f in files if t in (f.parts[0], _table_of(f.name))) for t in TABLES
    }


def _table_of(name: str) -> str:
    """The table of a night's file name (`sku_market.parquet`, `.sku_market.parquet.writing`)."""
    return name.lstrip(".").split(".")[0]


def _build_runs(output: Path) -> list[str]:
    return [r[0] for r in _rows(output, "SELECT build_id FROM meta.build_run ORDER BY 1")]


def _night_names(ids: list[str]) -> dict[str, list[str]]:
    return {t: [f"build_id={i}/{t}.parquet" for i in ids] for t in TABLES}


@dataclass(frozen=True)
class ThreeNights:
    """The three nights of NIGHTS_LISTINGS built into `output`, and the first night's files
    (inode, mtime, bytes) as that night wrote them, before the later two."""

    output: Path
    ids: list[str]
    first_files: list[Path]
    first_written: list[tuple[int, int, bytes]]


def _as_written(files: list[Path]) -> list[tuple[int, int, bytes]]:
    return [(f.stat().st_ino, f.stat().st_mtime_ns, f.read_bytes()) for f in files]


@pytest.fixture(scope="module")
def three_nights(tmp_path_factory: pytest.TempPathFactory) -> ThreeNights:
    """Built once for the tests that only read it (one damages a file and puts it back)."""
    tmp_path = tmp_path_factory.mktemp("three-nights")
    first = _night(tmp_path, 0).build_id
    files = [night_file(tmp_path / "out", t, first) for t in TABLES]
    written = _as_written(files)
    ids = [first, *(_night(tmp_path, n).build_id for n in (1, 2))]
    return ThreeNights(tmp_path / "out", ids, files, written)


def test_each_night_s_figures_are_kept_row_for_row_and_never_copied(
    three_nights: ThreeNights, tmp_path: Path, monkeypatch: Any
) -> None:
    output, ids, files = three_nights.output, three_nights.ids, three_nights.first_files
    # The later nights wrote their own files and copied, linked or touched no earlier one's.
    assert _as_written(files) == three_nights.first_written
    assert all(f.stat().st_nlink == 1 for f in files)
    assert _files(output) == _night_names(ids)
    monkeypatch.chdir(tmp_path)  # the views name absolute paths
    night = "dense_rank() OVER (ORDER BY built_at)"
    assert _rows(
        output,
        f"SELECT {night}, store_key, listing_count, quantity, inventory_value::varchar "
        "FROM history.store_volume ORDER BY 1, 2",
    ) == [
        (1, "s1", 2, 3, "7.00"),
        (1, "s2", 1, 1, "1.50"),
        (2, "s1", 2, 3, "6.80"),
        (2, "s2", 1, 1, "1.50"),
        (3, "s1", 2, 3, "6.80"),
        (3, "s2", 1, 3, "6.00"),
    ]
    assert _rows(
        output,
        f"SELECT {night}, sku_id, low_price::varchar, high_price::varchar, listing_count, "
        "store_count, quantity FROM history.sku_market ORDER BY 1, 2",
    ) == [
        (1, 1000, "1.00", "1.50", 2, 2, 3),
        (1, 1001, None, None, 0, 0, 0),
        (1, 1010, "5.00", "5.00", 1, 1, 1),
        (2, 1000, "0.90", "1.50", 2, 2, 3),
        (2, 1001, None, None, 0, 0, 0),
        (2, 1010, "5.00", "5.00", 1, 1, 1),
        (3, 1000, "0.90", "2.00", 2, 2, 5),
        (3, 1001, None, None, 0, 0, 0),
        (3, 1010, "5.00", "5.00", 1, 1, 1),
    ]
    assert _rows(
        output,
        f"SELECT {night}, product_id, printing_id, low_price::varchar, mid_price::varchar, "
        "high_price::varchar FROM history.product_market WHERE product_id = 100 ORDER BY 1, 3",
    ) == [
        (1, 100, 1, "1.00", "1.00", "1.50"),
        (1, 100, 2, None, None, None),
        (2, 100, 1, "0.90", "0.90", "1.50"),
        (2, 100, 2, None, None, None),
        (3, 100, 1, "0.90", "0.90", "2.00"),
        (3, 100, 2, None, None, None),
    ]
    # Each night's rows carry its build and its start, as meta.build_run has them.
    assert _rows(
        output,
        "SELECT DISTINCT h.build_id, h.built_at = r.started_at FROM history.store_volume h "
        "JOIN meta.build_run r USING (build_id) ORDER BY 1",
    ) == [(i, True) for i in ids]
    # The marts of tonight are the last night of the history.
    assert _rows(
        output,
        "SELECT count(*) FROM (FROM marts.sku_market EXCEPT ALL "
        "SELECT * EXCLUDE (build_id, built_at) FROM history.sku_market "
        "WHERE build_id = (SELECT max(build_id) FROM meta.build_run))",
    ) == [(0,)]
    comments = _rows(
        output,
        "SELECT table_name, column_name FROM duckdb_columns() "
        "WHERE schema_name = 'history' AND comment IS NULL",
    )
    assert comments == []


def test_the_views_list_the_last_history_nights_and_older_files_go(tmp_path: Path) -> None:
    """history_nights 2 and releases_kept 2: the views list the last 2 nights, and the files
    of the 3 that the two kept releases' warehouses list stay (the first night's go)."""
    kept = {"history_nights": 2, "releases_kept": 2}
    ids = [_night(tmp_path, n % 3, build=kept).build_id for n in range(4)]
    output = tmp_path / "out"
    assert _listed(output) == {t: ids[-2:] for t in TABLES}
    assert _files(output) == _night_names(ids[-3:])
    assert not night_file(output, TABLES[0], ids[0]).parent.exists()
    # The release kept before the current one still reads every night it lists.
    [previous] = [r for r in (output / "releases").iterdir() if r.name == ids[-2]]
    assert _listed(previous) == {t: ids[-3:-1] for t in TABLES}


def test_a_failed_build_adds_no_night_and_loses_none(tmp_path: Path) -> None:
    first = _night(tmp_path, 0)
    output = tmp_path / "out"
    # Cut by half: the volume guards refuse it before it writes a file.
    inputs = write_inputs(tmp_path / "cut", listings=NIGHTS_LISTINGS[0][:1])
    settings = load_settings(None, input=inputs, output=output, build={"volume": {"min_count": 1}})
    with pytest.raises(BuildError):
        build(settings)
    assert _files(output) == _night_names([first.build_id])
    # A night's files left by a build that stopped after writing them (a failed commit, a
    # kill): the next build lists them not, and removes them.
    orphan = "29990101T000000.000000Z-0rphan"
    for table in TABLES:
        night_file(output, table, orphan).parent.mkdir(exist_ok=True)
        night_file(output, table, orphan).write_bytes(b"not even Parquet")
        writing = night_file(output, table, first.build_id).with_name(f".{table}.parquet.writing")
        writing.write_bytes(b"half")
    second = _night(tmp_path, 1)
    assert _listed(output) == {t: [first.build_id, second.build_id] for t in TABLES}
    assert _files(output) == _night_names([first.build_id, second.build_id])
    assert not night_file(output, TABLES[0], orphan).parent.exists()


def test_a_query_of_some_nights_opens_only_their_files(three_nights: ThreeNights) -> None:
    """The middle night's file of sku_market made unreadable: a query that filters on the last
    night, by value or by history.nights, never opens it; one over every night names it."""
    output, ids = three_nights.output, three_nights.ids
    middle = night_file(output, "sku_market", ids[1])
    kept = middle.with_name(".kept")  # the file itself, put back after (inode, mtime, bytes)
    middle.rename(kept)
    try:
        middle.write_bytes(b"PAR1 not Parquet PAR1")
        last = "SELECT build_id FROM history.nights ORDER BY build_id DESC LIMIT 1"
        for nights in (f"'{ids[2]}'", last):
            rows = _rows(
                output,
                "SELECT build_id, sku_id, low_price::varchar FROM history.sku_market "
                f"WHERE build_id IN ({nights}) AND sku_id = 1000",
            )
            assert rows == [(ids[2], 1000, "0.90")]
        with pytest.raises(duckdb.Error, match=ids[1]):
            _rows(output, "SELECT count(*) FROM history.sku_market")
    finally:
        kept.replace(middle)


def test_the_layout_before_is_read_in_place_and_its_nights_age_out(tmp_path: Path) -> None:
    """Nights written as `history/<table>/<build_id>.parquet` (the layout before a night's
    folder): the next build lists them as they are, beside its own night, and removes them as
    they age out; the one it keeps is not moved or touched."""
    kept = {"releases_kept": 1, "history_nights": 2}
    ids = [_night(tmp_path, n, build=kept).build_id for n in (0, 1)]
    output = tmp_path / "out"
    before = {}
    for table in TABLES:
        (output / NIGHTS / table).mkdir()
        for night in ids:
            old = output / NIGHTS / table / f"{night}.parquet"
            night_file(output, table, night).rename(old)
            before[old] = old.stat().st_ino, old.stat().st_mtime_ns
    for night in ids:
        night_file(output, TABLES[0], night).parent.rmdir()
    third = _night(tmp_path, 2, build=kept).build_id
    assert _listed(output) == {t: [ids[1], third] for t in TABLES}
    assert _files(output) == {
        t: sorted([f"{t}/{ids[1]}.parquet", f"build_id={third}/{t}.parquet"]) for t in TABLES
    }
    untouched = [
        (p.stat().st_ino, p.stat().st_mtime_ns) == s for p, s in before.items() if ids[1] in p.name
    ]
    assert untouched == [True] * len(TABLES)
    assert _rows(
        output,
        "SELECT build_id, low_price::varchar FROM history.sku_market WHERE sku_id = 1000 "
        "ORDER BY build_id",
    ) == [(ids[1], "0.90"), (third, "0.90")]
    fourth = _night(tmp_path, 0, build=kept).build_id
    assert _files(output) == _night_names([third, fourth])
    assert sorted(p.name for p in (output / NIGHTS).iterdir()) == [
        f"build_id={n}" for n in (third, fourth)
    ]


def test_a_damaged_release_loses_no_published_night(tmp_path: Path) -> None:
    """The live release's build_run.parquet and warehouse both lost: meta.build_run comes from
    the release before it, without the live build's row; the live night is still listed."""
    first, second = (_night(tmp_path, n) for n in (0, 1))
    output = tmp_path / "out"
    flip_a_bit(second.release / HISTORY)
    (second.release / WAREHOUSE).write_bytes(b"cut")
    third = _night(tmp_path, 2)
    assert second.build_id not in _build_runs(output)
    ids = [first.build_id, second.build_id, third.build_id]
    assert _listed(output) == {t: ids for t in TABLES}
    assert _files(output) == _night_names(ids)


def test_the_state_format_upgrade_loses_no_night(tmp_path: Path) -> None:
    """A release of another state format lends its history: its nights are listed on."""
    ids = [_night(tmp_path, n).build_id for n in (0, 1)]
    output = tmp_path / "out"
    ((output / CURRENT).resolve() / FORMAT).write_text("1\n")
    third = _night(tmp_path, 2)
    assert any("state format 1" in w for w in third.report.build_warnings)
    assert _listed(output) == {t: [*ids, third.build_id] for t in TABLES}
