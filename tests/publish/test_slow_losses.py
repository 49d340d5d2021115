"""Guards for what users lose slowly or quietly: a store that had listings
and has none, a drift against the median of the last published builds, and a table that had
rows and has none, whatever `volume.min_count`. Each stops the build with one line naming what
moved, and `--accept-volume-change` lets it through into the report's build_warnings."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import orjson
import pytest

from pipeline.build import build
from pipeline.errors import BuildError
from pipeline.paths import REPORT_JSON, WAREHOUSE
from pipeline.settings import load_settings
from tests.support.inputs import write_inputs
from tests.support.proxy import fork_cli
from tests.support.volumes import LISTINGS, SMALL, published


def _report(output: Path) -> dict[str, Any]:
    report: dict[str, Any] = orjson.loads((output / REPORT_JSON).read_bytes())
    return report


def test_one_store_of_twenty_disappearing_stops_the_build_and_names_it(tmp_path: Path) -> None:
    """3 listings of 60 (5%) and one store's pages: under every other limit, and the default
    min_count compares no count this small. One of 20 stores is more than 1% of them."""
    output = tmp_path / "out"
    first = build(
        load_settings(None, input=write_inputs(tmp_path / "a", listings=LISTINGS), output=output)
    ).build_id
    without = [r for r in LISTINGS if r["storeKey"] != "store07"]
    cut = write_inputs(tmp_path / "b", listings=without)
    with pytest.raises(BuildError) as failed:
        build(load_settings(None, input=cut, output=output))
    move = (
        "stores: 1 of 20 stores with listings in the published build have none (store07), past "
        "build.volume.max_stores_lost 1% (at most 0 of 20)"
    )
    assert str(failed.value) == f"{move}; if the change is real, build with --accept-volume-change"
    assert published(output) == first
    # The operator says the change is real, on the command line.
    args = ("build", "--input", str(cut), "--output", str(output))
    accepted = fork_cli(*args, "--accept-volume-change")
    assert accepted.returncode == 0, accepted.stderr
    assert published(output) != first
    assert _report(output)["build_warnings"] == [f"{move}: accepted (build.accept_volume_change)"]


def test_the_stores_lost_are_named_the_first_few_and_a_count(tmp_path: Path) -> None:
    """Past the first five names, the line counts the others; a share lets some go."""
    output = tmp_path / "out"
    build(load_settings(None, input=write_inputs(tmp_path / "a", listings=LISTINGS), output=output))
    kept = [r for r in LISTINGS if r["storeKey"] >= "store07"]  # store00 .. store06 go
    cut = write_inputs(tmp_path / "b", listings=kept)
    with pytest.raises(
        BuildError,
        match=r"^stores: 7 of 20 stores with listings in the published build have none "
        r"\(store00, store01, store02, store03, store04 and 2 more\), past "
        r"build\.volume\.max_stores_lost 30% \(at most 6 of 20\)",
    ):
        build(
            load_settings(
                None, input=cut, output=output, build={"volume": {"max_stores_lost": 0.3}}
            )
        )
    result = build(
        load_settings(None, input=cut, output=output, build={"volume": {"max_stores_lost": 0.35}})
    )
    assert result.report.build_warnings == []


# Ten stores of up to 30 listings each: a night keeps the first `n`, every store keeps some.
MANY_SKUS = [
    {
        "skuId": 2000 + i,
        "productId": 100 + i % 2,
        "conditionId": 1,
        "languageId": 1,
        "printingId": 1,
    }
    for i in range(30)
]
SPREAD = [
    {"storeKey": f"shop{s}", "skuId": sku["skuId"], "price": "1.00", "quantity": 1}
    for sku in MANY_SKUS
    for s in range(10)
]


def test_four_nights_of_minus_18_percent_are_stopped_against_the_rolling_median(
    tmp_path: Path,
) -> None:
    """Each night loses 18% of the listings, under max_drop against the night before; against
    the median of the last published builds it is more. A night let through by the flag
    starts the baseline again (the operator said that level is real), so the drift is stopped
    every second night."""
    output = tmp_path / "out"
    # -18% a night: 45% of the listings are left. The third build is the first with two before
    # it (a median that is not the night before); the fourth passes only because the third, let
    # through, started the baseline again; the fifth is stopped again.
    counts = [300, 246, 202, 165, 135]
    stopped: list[str] = []
    for night, n in enumerate(counts):
        inputs = write_inputs(tmp_path / f"n{night}", skus=MANY_SKUS, listings=SPREAD[:n])
        try:
            build(load_settings(None, input=inputs, output=output, build=SMALL))
            continue
        except BuildError as exc:
            stopped.append(str(exc))
        accepted = build(
            load_settings(
                None, input=inputs, output=output, build={**SMALL, "accept_volume_change": True}
            )
        )
        moves = accepted.report.build_warnings
        assert moves == [
            stopped[-1].split("; if the change is real")[0]
            + ": accepted (build.accept_volume_change)"
        ]
    assert stopped == [
        "stores/listings: 202 accepted rows, against a median of 273 over the last 2 published "
        "builds (-26.0%, past build.volume.max_drop 20%); if the change is real, build with "
        "--accept-volume-change",
        "stores/listings: 135 accepted rows, against a median of 183.5 over the last 2 "
        "published builds (-26.4%, past build.volume.max_drop 20%); if the change is real, build "
        "with --accept-volume-change",
    ]
    con = duckdb.connect(str(output / WAREHOUSE), read_only=True)
    try:
        runs = con.execute(
            "SELECT listings, volume_change_accepted FROM meta.build_run ORDER BY started_at, "
            "build_id"
        ).fetchall()
    finally:
        con.close()
    assert runs == [
        (300, False),
        (246, False),
        (202, True),
        (165, False),
        (135, True),
    ]


def test_the_baseline_spans_volume_baseline_builds(tmp_path: Path) -> None:
    """With a baseline of one build, only the night before counts: the slow drift passes (the
    third night, which the default baseline's median stops, included)."""
    output = tmp_path / "out"
    volume = {"min_count": 10, "baseline_builds": 1}
    for night, n in enumerate([300, 246, 202]):
        inputs = write_inputs(tmp_path / f"n{night}", skus=MANY_SKUS, listings=SPREAD[:n])
        assert (
            build(
                load_settings(None, input=inputs, output=output, build={"volume": volume})
            ).report.build_warnings
            == []
        )


EXCLUDED = [{"storeKey": "store00", "channelId": 1, "categoryId": 1}]


def test_an_optional_table_that_vanishes_stops_the_build_whatever_min_count(
    tmp_path: Path,
) -> None:
    """The exclusions file removed: every store would show its excluded categories, with no
    word. One row is far under min_count, and still compared."""
    output = tmp_path / "out"
    inputs = write_inputs(tmp_path / "in", listings=LISTINGS, excluded_categories=EXCLUDED)
    first = build(load_settings(None, input=inputs, output=output)).build_id
    (inputs / "stores" / "excluded_categories.csv").unlink()
    move = (
        "stores/excluded_categories: 0 accepted rows, against 1 in the published build "
        "(-100.0%: the table vanished, compared whatever build.volume.min_count)"
    )
    with pytest.raises(BuildError) as failed:
        build(load_settings(None, input=inputs, output=output))
    assert str(failed.value) == f"{move}; if the change is real, build with --accept-volume-change"
    assert published(output) == first
    result = build(
        load_settings(None, input=inputs, output=output, build={"accept_volume_change": True})
    )
    assert result.report.build_warnings == [f"{move}: accepted (build.accept_volume_change)"]
    # A table allowed to fall to nothing (max_drop 1) may vanish.
    volume = {"tables": {"stores/excluded_categories": {"max_drop": 1.0}}}
    write_inputs(inputs, listings=LISTINGS, excluded_categories=EXCLUDED)
    build(load_settings(None, input=inputs, output=output))
    (inputs / "stores" / "excluded_categories.csv").unlink()
    assert (
        build(
            load_settings(None, input=inputs, output=output, build={"volume": volume})
        ).report.build_warnings
        == []
    )
