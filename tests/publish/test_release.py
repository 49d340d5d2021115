"""Publishing never puts a release online that lacks a file its manifest names: a pool folder
that a killed clean-up left in part is never adopted, and a build checks its site against its
manifest before the swap."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from pipeline.build import build
from pipeline.errors import BuildError
from pipeline.export.manifest import Manifest
from pipeline.paths import POOL, SITE
from pipeline.publish.release import missing_files, pool_folders
from pipeline.settings import load_settings
from tests.conftest import write_inputs

LISTINGS = [
    {"storeKey": "alpha", "skuId": 1000, "price": "3.00", "quantity": 2},
    {"storeKey": "alpha", "skuId": 1010, "price": "9.50", "quantity": 1},
    {"storeKey": "beta", "skuId": 1001, "price": "1.25", "quantity": 4},
]


def _complete(output: Path) -> list[str]:
    """The files the published manifest names that its site lacks."""
    release = (output / "current").resolve()
    return missing_files(release / SITE, Manifest.load(release))


def test_a_pool_folder_left_in_part_by_a_killed_clean_up_is_never_adopted(
    tmp_path: Path,
) -> None:
    a = write_inputs(tmp_path / "a", listings=LISTINGS)
    b = write_inputs(tmp_path / "b", listings=[{**r, "price": "7.77"} for r in LISTINGS])
    output = tmp_path / "out"
    build(load_settings(None, input=a, output=output, releases_kept=1))
    folder = pool_folders((output / "current").resolve())["alpha"]
    kept = tmp_path / "kept"
    shutil.copytree(output / POOL / folder, kept)
    build(load_settings(None, input=b, output=output, releases_kept=1))
    assert not (output / POOL / folder).exists()  # B's publish deleted A's folder
    # What a kill in the middle of that deletion leaves: the folder, with some files gone.
    shutil.copytree(kept, output / POOL / folder)
    pages = sorted((output / POOL / folder).rglob("*.json"))
    assert len(pages) > 1
    pages[0].unlink()
    build(load_settings(None, input=a, output=output, releases_kept=1))  # A again: same digest
    assert _complete(output) == []
    assert pool_folders((output / "current").resolve())["alpha"] == folder


def test_a_release_missing_a_file_is_not_published(tmp_path: Path) -> None:
    inputs = write_inputs(tmp_path / "in", listings=LISTINGS)
    output = tmp_path / "out"
    first = build(load_settings(None, input=inputs, output=output)).release
    folder = output / POOL / pool_folders(first)["beta"]
    page = next(folder.rglob("*.json"))
    os.unlink(page)  # damage: the next build carries the store over, folder and all
    with pytest.raises(BuildError, match=r"1 files its manifest names are missing \(first: "):
        build(load_settings(None, input=inputs, output=output))
    assert (output / "current").resolve() == first


def test_the_releases_kept_are_the_last_published(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Builds that start within one second have ids that sort by their random suffix: the
    newest must still be kept, not whichever id sorts last."""
    ids = iter(["20260101T000000Z-ffffff", "20260101T000000Z-888888", "20260101T000000Z-000000"])
    monkeypatch.setattr("pipeline.build.new_build_id", lambda: next(ids))
    settings = load_settings(
        None, input=write_inputs(tmp_path / "in", listings=LISTINGS), output=tmp_path / "out"
    )
    published = [build(settings.model_copy(update={"releases_kept": 2})).build_id for _ in "abc"]
    kept = sorted(p.name for p in (tmp_path / "out" / "releases").iterdir())
    assert kept == sorted(published[1:])
    assert (tmp_path / "out" / "current").resolve().name == published[-1]
    assert _complete(tmp_path / "out") == []
