"""Volume guards: a build whose counts moved too far from the published build's stops with one
line naming the count and both numbers, unless told the change is real; and shards merge only
when they ingested the same rows, whatever the files hold by the time the build ends."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson
import pytest

from pipeline.build import build
from pipeline.errors import BuildError
from pipeline.paths import REPORT_JSON
from pipeline.progress import Advance, Reporter
from pipeline.publish.merge import merge
from pipeline.settings import load_settings
from tests.support.inputs import write_inputs, write_table
from tests.support.runs import run_cli
from tests.support.volumes import LISTINGS, SMALL, published


def test_an_export_cut_in_half_stops_the_build_with_both_counts(tmp_path: Path) -> None:
    output = tmp_path / "out"
    full = write_inputs(tmp_path / "full", listings=LISTINGS)
    cut = write_inputs(tmp_path / "cut", listings=LISTINGS[:30])
    first = build(load_settings(None, input=full, output=output, **SMALL)).build_id
    with pytest.raises(BuildError) as failed:
        build(load_settings(None, input=cut, output=output, **SMALL))
    assert str(failed.value) == (
        "stores/listings: 30 accepted rows, against 60 in the published build (-50.0%, past "
        "volume.max_drop 20%); if the change is real, build with --accept-volume-change"
    )
    assert published(output) == first
    # The operator says the change is real: the flag on the command line, or the setting.
    env = {"PIPELINE_VOLUME__MIN_COUNT": "10"}
    args = ("build", "--input", str(cut), "--output", str(output))
    refused = run_cli(*args, env=env)
    assert refused.returncode == 1
    assert "\nbuild failed: stores/listings: 30 accepted rows, against 60" in refused.stderr
    accepted = run_cli(*args, "--accept-volume-change", env=env)
    assert accepted.returncode == 0, accepted.stderr
    assert published(output) != first
    report = orjson.loads((output / REPORT_JSON).read_bytes())
    moves = report["build_warnings"]  # the moves let through are on record
    assert moves[0] == (
        "stores/listings: 30 accepted rows, against 60 in the published build (-50.0%, past "
        "volume.max_drop 20%): accepted (accept_volume_change)"
    )
    assert re.fullmatch(
        r"site: \d+ files, against \d+ in the published build \(-\d+\.\d%, past volume\.max_drop "
        r"20%\): accepted \(accept_volume_change\)",
        moves[1],
    )
    assert moves[2] == (  # the half of the stores that went, all their pages
        "stores: 10 of 20 stores with listings in the published build have none (store10, "
        "store11, store12, store13, store14 and 5 more), past volume.max_stores_lost 1% (at most "
        "0 of 20): accepted (accept_volume_change)"
    )
    assert len(moves) == 3


def test_a_table_that_doubles_and_more_stops_the_build(tmp_path: Path) -> None:
    output = tmp_path / "out"
    build(
        load_settings(
            None, input=write_inputs(tmp_path / "a", listings=LISTINGS[:20]), output=output, **SMALL
        )
    )
    with pytest.raises(
        BuildError,
        match=r"^stores/listings: 60 accepted rows, against 20 .*"
        r"\(\+200\.0%, past volume\.max_rise 100%\)",
    ):
        build(
            load_settings(
                None, input=write_inputs(tmp_path / "b", listings=LISTINGS), output=output, **SMALL
            )
        )


def test_the_site_file_count_has_its_own_limit(tmp_path: Path) -> None:
    """The listings may drop by half tonight (their own limit), the site's files by 20%."""
    output = tmp_path / "out"
    volume: dict[str, Any] = {"min_count": 10, "tables": {"stores/listings": {"max_drop": 0.6}}}
    first = build(
        load_settings(
            None,
            input=write_inputs(tmp_path / "a", listings=LISTINGS),
            output=output,
            volume=volume,
        )
    )
    files = first.report.site.files
    with pytest.raises(
        BuildError,
        match=rf"^site: \d+ files, against {files} in the published "
        r"build \(-\d+\.\d%, past volume\.max_drop 20%\)",
    ):
        build(
            load_settings(
                None,
                input=write_inputs(tmp_path / "b", listings=LISTINGS[:30]),
                output=output,
                volume=volume,
            )
        )
    assert published(output) == first.build_id


def test_a_volume_limit_names_a_known_table() -> None:
    with pytest.raises(ValueError, match=r"volume\.tables: Value error, 'stores/listing': not a "):
        load_settings(None, volume={"tables": {"stores/listing": {"max_drop": 0.5}}})


class _ReplaceDuringTransform(Reporter):
    """Runs `action` as the transform stage starts: after the ingest read the files."""

    def __init__(self, action: Any) -> None:
        super().__init__(enabled=False)
        self.action = action

    @contextmanager
    def stage(self, name: str, total: int | None = None, unit: str = "items") -> Iterator[Advance]:
        if name == "transform":
            self.action()
        with super().stage(name, total, unit) as advance:
            yield advance


def test_shards_that_ingested_different_rows_never_merge(tmp_path: Path) -> None:
    inputs = write_inputs(tmp_path / "in", listings=LISTINGS)
    changed = [{**row, "price": "2.00"} for row in LISTINGS]
    shard0 = load_settings(None, input=inputs, output=tmp_path / "s0", shard="0/2")
    build(shard0, _ReplaceDuringTransform(lambda: write_table(inputs, "listings", changed)))
    build(load_settings(None, input=inputs, output=tmp_path / "s1", shard="1/2"))
    with pytest.raises(BuildError, match="the shards were built from different inputs"):
        merge([tmp_path / "s0", tmp_path / "s1"], load_settings(None, output=tmp_path / "m"))


def test_the_merge_compares_the_tables_too(tmp_path: Path) -> None:
    """Shards built into fresh outputs have no previous build to compare with: the merge does."""
    merged = tmp_path / "merged"

    def shards(listings: list[dict[str, Any]], name: str) -> list[Path]:
        inputs = write_inputs(tmp_path / name, listings=listings)
        outputs = [tmp_path / f"{name}-{i}" for i in range(2)]
        for i, output in enumerate(outputs):
            build(load_settings(None, input=inputs, output=output, shard=f"{i}/2", **SMALL))
        return outputs

    merge(shards(LISTINGS, "full"), load_settings(None, output=merged, **SMALL))
    with pytest.raises(BuildError, match=r"^stores/listings: 30 accepted rows, against 60 "):
        merge(shards(LISTINGS[:30], "cut"), load_settings(None, output=merged, **SMALL))
