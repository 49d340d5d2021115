"""Volume guards: a build whose counts moved too far from the published build's stops with one
line naming the count and both numbers, unless told the change is real."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson
import pytest

from pipeline.build import build
from pipeline.errors import BuildError
from pipeline.paths import REPORT_JSON
from pipeline.settings import load_settings
from tests.support.inputs import write_inputs
from tests.support.proxy import fork_cli
from tests.support.volumes import LISTINGS, SMALL, published


def test_an_export_cut_in_half_stops_the_build_with_both_counts(tmp_path: Path) -> None:
    output = tmp_path / "out"
    full = write_inputs(tmp_path / "full", listings=LISTINGS)
    cut = write_inputs(tmp_path / "cut", listings=LISTINGS[:30])
    first = build(load_settings(None, input=full, output=output, build=SMALL)).build_id
    with pytest.raises(BuildError) as failed:
        build(load_settings(None, input=cut, output=output, build=SMALL))
    assert str(failed.value) == (
        "stores/listings: 30 accepted rows, against 60 in the published build (-50.0%, past "
        "build.volume.max_drop 20%); if the change is real, build with --accept-volume-change"
    )
    assert published(output) == first
    # The operator says the change is real: the flag on the command line, or the setting.
    env = {"PIPELINE_BUILD__VOLUME__MIN_COUNT": "10"}
    args = ("build", "--input", str(cut), "--output", str(output))
    accepted = fork_cli(*args, "--accept-volume-change", env=env)
    assert accepted.returncode == 0, accepted.stderr
    assert published(output) != first
    report = orjson.loads((output / REPORT_JSON).read_bytes())
    moves = report["build_warnings"]  # the moves let through are on record
    assert moves[0] == (
        "stores/listings: 30 accepted rows, against 60 in the published build (-50.0%, past "
        "build.volume.max_drop 20%): accepted (build.accept_volume_change)"
    )
    assert re.fullmatch(
        r"site: \d+ files, against \d+ in the published build \(-\d+\.\d%, past build\.volume\."
        r"max_drop 20%\): accepted \(build\.accept_volume_change\)",
        moves[1],
    )
    assert moves[2] == (  # the half of the stores that went, all their pages
        "stores: 10 of 20 stores with listings in the published build have none (store10, "
        "store11, store12, store13, store14 and 5 more), past build.volume.max_stores_lost 1% (at most "
        "0 of 20): accepted (build.accept_volume_change)"
    )
    assert len(moves) == 3


def test_a_table_that_doubles_and_more_stops_the_build(tmp_path: Path) -> None:
    output = tmp_path / "out"
    build(
        load_settings(
            None,
            input=write_inputs(tmp_path / "a", listings=LISTINGS[:20]),
            output=output,
            build=SMALL,
        )
    )
    with pytest.raises(
        BuildError,
        match=r"^stores/listings: 60 accepted rows, against 20 .*"
        r"\(\+200\.0%, past build\.volume\.max_rise 100%\)",
    ):
        build(
            load_settings(
                None,
                input=write_inputs(tmp_path / "b", listings=LISTINGS),
                output=output,
                build=SMALL,
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
            build={"volume": volume},
        )
    )
    files = first.report.site.files
    with pytest.raises(
        BuildError,
        match=rf"^site: \d+ files, against {files} in the published "
        r"build \(-\d+\.\d%, past build\.volume\.max_drop 20%\)",
    ):
        build(
            load_settings(
                None,
                input=write_inputs(tmp_path / "b", listings=LISTINGS[:30]),
                output=output,
                build={"volume": volume},
            )
        )
    assert published(output) == first.build_id


def test_a_volume_limit_names_a_known_table() -> None:
    match = r"build\.volume\.tables: Value error, 'stores/listing': not a "
    with pytest.raises(ValueError, match=match):
        load_settings(None, build={"volume": {"tables": {"stores/listing": {"max_drop": 0.5}}}})
