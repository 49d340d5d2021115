"""Without `current` (removed, or linking to no release), the releases are still there: the last
one published is the build's baseline, for its history, its volume guards and the pages it
carries over, and the build says so."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import duckdb
import pytest

from pipeline.build import build
from pipeline.errors import BuildError
from pipeline.paths import CURRENT, RELEASES, WAREHOUSE
from pipeline.settings import load_settings
from tests.support.inputs import write_inputs
from tests.support.proxy import fork_cli

SKUS = (1000, 1001, 1010)
LISTINGS = [
    {"storeKey": f"s{n}", "skuId": SKUS[n % 3], "price": f"{n + 1}.00", "quantity": 1}
    for n in range(10)
]
GUARDED = {"min_count": 1}  # the volumes of a tiny input are compared too


def _remove(output: Path) -> None:
    (output / CURRENT).unlink()


def _dangle(output: Path) -> None:
    (output / CURRENT).unlink()
    (output / CURRENT).symlink_to(Path(RELEASES) / "20200101T000000.000000Z-gone00")


def _build_ids(output: Path) -> list[str]:
    con = duckdb.connect(str(output / WAREHOUSE), read_only=True)
    try:
        rows = con.execute("SELECT build_id FROM meta.build_run ORDER BY build_id").fetchall()
        return [r[0] for r in rows]
    finally:
        con.close()


@pytest.mark.parametrize("lose", [_remove, _dangle])
def test_without_current_the_last_published_release_is_the_baseline(
    tmp_path: Path, lose: Callable[[Path], None]
) -> None:
    output = tmp_path / "out"
    full = write_inputs(tmp_path / "full", listings=LISTINGS)
    ids = [
        build(load_settings(None, input=full, output=output, build={"volume": GUARDED}))
        for _ in "ab"
    ]
    last = ids[-1].release
    lose(output)
    said = f"{output / CURRENT}: "
    baseline = f"the last release published, {last}, is this build's baseline"

    # 30% of the listings: the volume guard compares with the last release published.
    small = write_inputs(tmp_path / "small", listings=LISTINGS[:3])
    failed = fork_cli(
        "build",
        "--input",
        str(small),
        "--output",
        str(output),
        env={"PIPELINE_BUILD__VOLUME__MIN_COUNT": "1"},
    )
    assert failed.returncode == 1, failed.stderr
    assert "build failed: stores/listings: 3 accepted rows, against 10 in the published" in (
        failed.stderr
    )
    assert said in failed.stderr and baseline in failed.stderr  # the warning, on the log
    assert not (output / CURRENT).exists()  # nothing published

    # Told that the drop is real: published, with its history, and the baseline said.
    settings = load_settings(
        None, input=small, output=output, build={"volume": GUARDED, "accept_volume_change": True}
    )
    third = build(settings)
    warning = third.report.build_warnings[0]
    assert warning.startswith(said) and warning.endswith(
        f"{baseline} (its history, volumes and pages)"
    )
    assert _build_ids(output) == sorted([r.build_id for r in ids] + [third.build_id])
    assert third.report.site.stores_unchanged == 3  # carried over from the baseline
    assert os.readlink(output / CURRENT) == f"{RELEASES}/{third.build_id}"

    # and the next night follows the new `current`, with nothing to say
    fourth = build(load_settings(None, input=small, output=output, build={"volume": GUARDED}))
    assert fourth.report.build_warnings == []
    assert len(_build_ids(output)) == 4


def test_a_new_output_still_starts_from_scratch_in_silence(tmp_path: Path) -> None:
    output = tmp_path / "out"
    inputs = write_inputs(tmp_path / "in", listings=LISTINGS)
    with pytest.raises(BuildError, match="no usable product rows"):  # a failed first build
        build(
            load_settings(None, input=write_inputs(tmp_path / "empty", products=[]), output=output)
        )
    first = build(load_settings(None, input=inputs, output=output, build={"volume": GUARDED}))
    assert first.report.build_warnings == []
    assert len(_build_ids(output)) == 1
