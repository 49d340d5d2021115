"""The build history (meta.build_run) is carried from release to release, whoever holds the
published warehouse, and a history that cannot be read is said, never silently dropped."""

from __future__ import annotations

import io
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import orjson
import pytest

from pipeline.build import build
from pipeline.export.records import history
from pipeline.export.records.state import STATE_FORMAT
from pipeline.paths import HISTORY, REPORT_JSON, WAREHOUSE
from pipeline.progress import Reporter
from pipeline.settings import load_settings
from tests.support.damage import flip_a_bit
from tests.support.inputs import write_inputs

# Holds a DuckDB file open read-write (as the DuckDB shell does by default) until stdin closes.
HOLDER = """
import sys, duckdb
con = duckdb.connect(sys.argv[1])
print("holding", flush=True)
sys.stdin.read()
con.close()
"""


def _history(output: Path) -> list[str]:
    con = duckdb.connect(str(output / "warehouse.duckdb"), read_only=True)
    try:
        return [r[0] for r in con.execute("SELECT build_id FROM meta.build_run").fetchall()]
    finally:
        con.close()


def test_an_analyst_holding_the_warehouse_read_write_keeps_the_history(tmp_path: Path) -> None:
    settings = load_settings(None, input=write_inputs(tmp_path / "in"), output=tmp_path / "out")
    first = build(settings).build_id
    warehouse = (tmp_path / "out" / "warehouse.duckdb").resolve()
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(warehouse)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "holding\n"
        second = build(settings)
    finally:
        holder.communicate(timeout=60)
    assert sorted(_history(tmp_path / "out")) == sorted([first, second.build_id])
    assert second.report.build_warnings == []
    # The report's history. Two builds in one second may come in either
    # order (started_at is to the second, build ids end in a random suffix).
    runs = {r.build_id: r for r in second.report.history}
    assert sorted(runs) == sorted([first, second.build_id])
    site = second.report.site
    assert runs[second.build_id].files_changed == site.files - site.files_unchanged
    assert runs[first].files_changed == site.files  # the first build wrote every file
    assert all(r.listings == second.report.tables["listings"].accepted for r in runs.values())


def _cut(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:20])  # not Parquet (nor DuckDB) any more


@pytest.mark.parametrize("damage", [_cut, flip_a_bit])  # state.sha256 knows its SHA-256
def test_a_history_that_cannot_be_read_is_taken_from_the_release_s_warehouse(
    tmp_path: Path, damage: Callable[[Path], None]
) -> None:
    inputs = write_inputs(tmp_path / "in")
    output = tmp_path / "out"
    first = build(load_settings(None, input=inputs, output=output))
    history = first.release / HISTORY
    damage(history)
    said = "damaged since it was published"
    log = io.StringIO()  # as `pipeline build` logs to its standard error, not a terminal
    build(load_settings(None, input=inputs, output=output), Reporter(log, interactive=False))
    events = [orjson.loads(line) for line in log.getvalue().splitlines()]
    [logged] = [e["message"] for e in events if e["event"] == "warning"]
    assert logged.startswith(f"{history}: {said}")
    report = orjson.loads((output / "build_report.json").read_bytes())
    [warning] = report["build_warnings"]
    assert warning.startswith(f"{history}: {said}")
    assert warning.endswith(f"; meta.build_run carried on from {first.release / WAREHOUSE}")
    assert sorted(_history(output)) == sorted([first.build_id, report["build_id"]])


def test_without_the_release_s_copies_the_history_comes_from_an_earlier_release(
    tmp_path: Path,
) -> None:
    """The published release's build_run.parquet and warehouse both lost: the last release
    published before it still has the history, without the published build's own row."""
    inputs = write_inputs(tmp_path / "in")
    output = tmp_path / "out"
    first, second = (build(load_settings(None, input=inputs, output=output)) for _ in "ab")
    flip_a_bit(second.release / HISTORY)
    _cut(second.release / WAREHOUSE)
    third = build(load_settings(None, input=inputs, output=output))
    [warning] = third.report.build_warnings
    assert warning.startswith(f"{second.release / HISTORY}: damaged since it was published")
    assert f"; {second.release / WAREHOUSE}: the build history could not be read (" in warning
    earlier = first.release / HISTORY
    assert warning.endswith(
        f"; meta.build_run carried on from {earlier}, which lacks the builds published after it"
    )
    assert sorted(_history(output)) == sorted([first.build_id, third.build_id])

    # With no copy left anywhere, the history starts again, and says so.
    for release in (first.release, third.release):
        (release / HISTORY).unlink()
        _cut(release / WAREHOUSE)
    fourth = build(load_settings(None, input=inputs, output=output))
    [warning] = fourth.report.build_warnings
    assert warning.endswith("; meta.build_run starts again with this build")
    assert _history(output) == [fourth.build_id]


def test_an_output_from_before_releases_carries_its_history_as_an_earlier_format(
    tmp_path: Path,
) -> None:
    """An output directory whose warehouse is a plain file (no `current`, no releases)."""
    output = tmp_path / "out"
    output.mkdir()
    con = duckdb.connect(str(output / "warehouse.duckdb"))
    con.execute("CREATE SCHEMA meta")
    history.create_table(con)
    con.execute("INSERT INTO meta.build_run (build_id, stores) VALUES ('20200101T000000Z-old', 1)")
    con.close()
    result = build(load_settings(None, input=write_inputs(tmp_path / "in"), output=output))
    assert sorted(_history(output)) == sorted(["20200101T000000Z-old", result.build_id])
    # A release of an earlier format, as any other: one warning, its history carried on.
    assert result.report.build_warnings == [
        f"{output}: state format 1, not this version's {STATE_FORMAT}; every store's pages are "
        "built again and the volumes are not compared with it; its history is carried on"
    ]


def test_a_build_states_one_time(sample_build: Path) -> None:
    """The build id's time (UTC, to the microsecond) is the build's time: meta.build_run's
    started_at and its night's built_at in history.* are the same instant, and the report
    states it to the second."""
    con = duckdb.connect(str((sample_build / WAREHOUSE).resolve()), read_only=True)
    try:
        [(build_id, started_at)] = con.execute(
            "SELECT build_id, started_at FROM meta.build_run"
        ).fetchall()
        built_at = {
            table: con.execute(f"SELECT DISTINCT built_at FROM history.{table}").fetchall()
            for table in ("sku_market", "product_market", "store_volume")
        }
    finally:
        con.close()
    stamp = datetime.strptime(build_id.split("Z-")[0], "%Y%m%dT%H%M%S.%f")
    assert started_at == stamp
    assert built_at == {table: [(stamp,)] for table in built_at}
    report = orjson.loads((sample_build / REPORT_JSON).read_bytes())
    assert report["started_at"] == stamp.replace(tzinfo=UTC).isoformat(timespec="seconds")
