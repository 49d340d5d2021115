"""`pipeline merge` ends as every build does: its own row in
meta.build_run with the merged site's counts, the history carried from the merged output's
previous release, and the same guards."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import orjson
import pytest

from pipeline.build import build
from pipeline.errors import BuildError
from pipeline.paths import REPORT_JSON, WAREHOUSE
from pipeline.publish.merge import merge
from pipeline.settings import load_settings
from tests.support.inputs import write_inputs
from tests.support.runs import run_cli

STORES = [f"store{i:02}" for i in range(20)]
LISTINGS = [
    {"storeKey": store, "skuId": sku, "price": "1.00", "quantity": 1}
    for store in STORES
    for sku in (1000, 1001, 1010)
]


def _shards(inputs: Path, outputs: list[Path]) -> list[Path]:
    for i, output in enumerate(outputs):
        build(load_settings(None, input=inputs, output=output, shard=f"{i}/{len(outputs)}"))
    return outputs


def _runs(output: Path) -> list[tuple[Any, ...]]:
    con = duckdb.connect(str(output / WAREHOUSE), read_only=True)
    try:
        return con.execute(
            "SELECT build_id, files, listings, stores FROM meta.build_run "
            "ORDER BY started_at, build_id"
        ).fetchall()
    finally:
        con.close()


def test_every_merge_records_its_own_build_with_the_merged_counts(tmp_path: Path) -> None:
    inputs = write_inputs(tmp_path / "in", listings=LISTINGS)
    shards = [tmp_path / "s0", tmp_path / "s1"]
    merged = tmp_path / "merged"
    first = merge(_shards(inputs, shards), load_settings(None, output=merged))
    second = merge(_shards(inputs, shards), load_settings(None, output=merged))
    files = second.report.site.files
    assert files == first.report.site.files
    shard_files = [orjson.loads((s / REPORT_JSON).read_bytes())["site"]["files"] for s in shards]
    assert sum(shard_files) == files and files not in shard_files
    assert _runs(merged) == [
        (first.build_id, files, 60, 20),
        (second.build_id, files, 60, 20),
    ]
    # The report's history is the merged output's too, and names where the merge came from.
    assert [r.build_id for r in second.report.history] == [
        first.build_id,
        second.build_id,
    ]
    assert second.report.merged_from == [
        orjson.loads((s / REPORT_JSON).read_bytes())["build_id"] for s in shards
    ]
    assert second.report.input == str(inputs)
    # The shards' own histories are theirs: the merge wrote nothing into their warehouses.
    assert [r[0] for r in _runs(shards[0])] != [r[0] for r in _runs(merged)]
    assert len(_runs(shards[0])) == 2


def test_a_merge_that_loses_a_store_stops_like_a_build(tmp_path: Path) -> None:
    """Each shard compares with its own previous build; the merge with the merged one."""
    merged = tmp_path / "merged"
    merge(
        _shards(
            write_inputs(tmp_path / "a", listings=LISTINGS), [tmp_path / "a0", tmp_path / "a1"]
        ),
        load_settings(None, output=merged),
    )
    without = [r for r in LISTINGS if r["storeKey"] != "store07"]
    shards = _shards(
        write_inputs(tmp_path / "b", listings=without), [tmp_path / "b0", tmp_path / "b1"]
    )
    with pytest.raises(BuildError, match=r"^stores: 1 of 20 stores with listings .* \(store07\)"):
        merge(shards, load_settings(None, output=merged))
    result = merge(shards, load_settings(None, output=merged, accept_volume_change=True))
    assert result.report.build_warnings == [
        "stores: 1 of 20 stores with listings in the published build have none (store07), past "
        "volume.max_stores_lost 1% (at most 0 of 20): accepted (accept_volume_change)"
    ]


def test_the_merge_command_shows_its_warnings_as_build_does(tmp_path: Path) -> None:
    """`pipeline merge` logs its stages and the warnings it went past (a JSON line each, out of
    a terminal), as `pipeline build` does, besides listing them in the report."""
    merged = tmp_path / "merged"
    first = _shards(
        write_inputs(tmp_path / "a", listings=LISTINGS), [tmp_path / "a0", tmp_path / "a1"]
    )
    done = run_cli("merge", "--output", str(merged), *map(str, first))
    assert done.returncode == 0, done.stderr
    without = [r for r in LISTINGS if r["storeKey"] != "store07"]
    shards = _shards(
        write_inputs(tmp_path / "b", listings=without), [tmp_path / "b0", tmp_path / "b1"]
    )
    args = ("merge", "--output", str(merged), "--accept-volume-change", *map(str, shards))
    accepted = run_cli(*args)
    assert accepted.returncode == 0, accepted.stderr
    events = [json.loads(line) for line in accepted.stderr.splitlines()]
    [warning] = [e["message"] for e in events if e["event"] == "warning"]
    assert warning == orjson.loads((merged / REPORT_JSON).read_bytes())["build_warnings"][0]
    assert warning.startswith("stores: 1 of 20 stores with listings in the published build")
    finished = [e["stage"] for e in events if e["event"] == "stage_finished"]
    assert finished == ["merge", "publish"]
    assert accepted.stdout.startswith("published merged build ")
