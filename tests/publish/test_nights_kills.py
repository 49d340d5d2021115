"""The market history across nights under kills and failures: whatever filesystem event of a
night's history files (their writing, the swap that publishes them, the removal of stale ones)
a SIGKILL or a failure lands on, the published warehouse lists exactly the published nights,
every one of them still there, and the next build leaves no file of a night it does not list.

Gathering nights into a block is killed at each of its events too: the block is published with
the release, or not at all.

Builds run forked and kill (or fail) themselves at the n-th event, as in
test_publish_kills.py (tests/support/proxy.py, `run_build`)."""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import pytest

from pipeline.build import build
from pipeline.export.records.nights import BLOCK, night_file
from pipeline.paths import CURRENT, NIGHTS, WAREHOUSE
from pipeline.settings import load_settings
from pipeline.transform.steps import NIGHT_TABLES
from tests.support.inputs import write_inputs
from tests.support.proxy import run_build

# One release kept and two nights listed: every build past the second removes a night's files.
ENV = {
    "PIPELINE_BUILD__RELEASES_KEPT": "1",
    "PIPELINE_BUILD__HISTORY_NIGHTS": "2",
    "PIPELINE_BUILD__VOLUME__MIN_COUNT": "10",
}
NIGHTS_LISTED = 2
SWAP_EVENTS = 3  # the publish's first events: the link, the swap, the mark
TABLES = [t.name for t in NIGHT_TABLES]


def _inputs(base: Path) -> list[Path]:
    """Two inputs with other prices and the same counts."""
    return [
        write_inputs(
            base / f"in-{price}",
            listings=[
                {"storeKey": f"store{i}", "skuId": sku, "price": price, "quantity": 1}
                for i in range(4)
                for sku in (1000, 1010)
            ],
        )
        for price in ("1.00", "2.00")
    ]


def _listed(output: Path) -> list[str]:
    """The nights the published warehouse lists, the same in every view, each file read."""
    con = duckdb.connect(str(output / WAREHOUSE), read_only=True)
    try:
        listed = {
            t: [
                r[0]
                for r in con.execute(
                    f"SELECT build_id, count(*) FROM history.{t} GROUP BY 1 ORDER BY 1"
                ).fetchall()
            ]
            for t in TABLES
        }
    finally:
        con.close()
    assert len({tuple(v) for v in listed.values()}) == 1, listed
    return listed[TABLES[0]]


def _live(output: Path) -> str:
    return (output / CURRENT).resolve().name


@pytest.mark.slow
def test_a_kill_or_a_failure_at_any_event_of_a_night_s_history_loses_no_published_night(
    tmp_path: Path,
) -> None:
    inputs = _inputs(tmp_path)
    output = tmp_path / "out"
    settings = load_settings(
        None, input=inputs[0], output=output, build={"releases_kept": 1, "history_nights": 2}
    )
    published = [build(settings).build_id]
    # Every event of each step, until a build goes past the step's last one.
    faults = [(("nights.tidy",), False), (("nights.write_night",), False)]
    faults += [(("nights.write_night",), True)]  # a failed write: the build stops
    runs = 0
    for steps, fail in [*faults, (("publish",), False)]:
        for event in range(1, 40 if steps != ("publish",) else SWAP_EVENTS + 1):
            args = ["build", "--input", str(inputs[runs % 2]), "--output", str(output)]
            code, err = run_build(args, ENV, event, steps, fail)
            runs += 1
            assert code in ((0, 1, 2) if fail else (0, -9)), err
            assert code in (0, -9) or "a failure injected" in err, err
            if _live(output) != published[-1]:
                published.append(_live(output))
            # The published warehouse lists the last nights published, each file read.
            assert _listed(output) == published[-NIGHTS_LISTED:], (steps, event, fail, err)
            if code == 0:
                break  # past the step's last event
        else:
            assert steps == ("publish",), f"{steps}: no build went past its events"
    # A clean build after them all: no file of a night it does not list (one release kept).
    code, err = run_build(["build", "--input", str(inputs[0]), "--output", str(output)], ENV)
    assert code == 0, err
    published.append(_live(output))
    assert _listed(output) == published[-NIGHTS_LISTED:]
    kept = published[-NIGHTS_LISTED:]
    files = [night_file(output, t, n) for n in kept for t in TABLES]
    left = sorted((output / NIGHTS).rglob("*"))
    assert left == sorted([*files, *{f.parent for f in files}])


# Blocks of two nights, every night listed: the fourth build gathers the first two nights.
BLOCK_ENV = {
    **ENV,
    "PIPELINE_BUILD__HISTORY_NIGHTS": "400",
    "PIPELINE_BUILD__HISTORY_BLOCK_NIGHTS": "2",
}


def _rows_a_night(output: Path) -> dict[str, set[int]]:
    """table -> the row counts its nights have (one count: each night's rows listed once)."""
    con = duckdb.connect(str(output / WAREHOUSE), read_only=True)
    try:
        return {
            t: {
                c
                for (c,) in con.execute(
                    f"SELECT count(*) FROM history.{t} GROUP BY build_id"
                ).fetchall()
            }
            for t in TABLES
        }
    finally:
        con.close()


def _blocks(output: Path) -> dict[str, list[str]]:
    """Each block folder -> the files in it."""
    return {
        f.name: sorted(p.name for p in f.iterdir())
        for f in (output / NIGHTS).iterdir()
        if f.name.startswith(BLOCK)
    }


@pytest.mark.slow
def test_a_kill_at_any_step_of_gathering_a_block_loses_no_night(tmp_path: Path) -> None:
    """Three nights built; the fourth build, which gathers the first two into a block, killed
    at each filesystem event of the gathering in turn, each time from the same three nights:
    the published warehouse still reads its three nights, each once, and the next build lists
    all four, each once, the block whole."""
    inputs = _inputs(tmp_path)
    output, saved = tmp_path / "out", tmp_path / "saved"
    for night in range(3):
        code, err = run_build(
            ["build", "--input", str(inputs[night % 2]), "--output", str(output)], BLOCK_ENV
        )
        assert code == 0, err
    three = _listed(output)
    once = _rows_a_night(output)
    assert all(len(counts) == 1 for counts in once.values()), once
    shutil.copytree(output, saved, symlinks=True)
    args = ["build", "--input", str(inputs[1]), "--output", str(output)]
    for event in range(1, 30):
        shutil.rmtree(output)
        shutil.copytree(saved, output, symlinks=True)
        code, err = run_build(args, BLOCK_ENV, event, ("blocks.gather",))
        assert code in (0, -9), err
        if code == 0:
            assert event > 1, "the fourth build gathered no block"
            break
        assert _listed(output) == three, event
        assert _rows_a_night(output) == once, event
        code, err = run_build(args, BLOCK_ENV)
        assert code == 0, err
        assert _listed(output) == [*three, _live(output)], event
        assert _rows_a_night(output) == once, event
        block = f"{BLOCK}{three[0]}_{three[1]}"
        assert _blocks(output) == {block: ["nights.txt", *sorted(f"{t}.parquet" for t in TABLES)]}
    else:
        raise AssertionError("no build went past the gathering's events")
