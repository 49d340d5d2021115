"""Publishing never puts a release online that lacks a file its manifest names: a pool folder
that a killed clean-up left in part is never adopted, and a build checks its site against its
manifest before the swap."""

from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path

import pytest

from pipeline.build import build
from pipeline.errors import BuildError
from pipeline.export.records.manifest import Manifest
from pipeline.paths import CURRENT, FORMAT, POOL, PUBLISHED, RELEASES, SITE
from pipeline.publish.release import check_release, missing_files, new_build_id, store_folders
from pipeline.settings import load_settings
from tests.support.inputs import write_inputs
from tests.support.proxy import fork_cli

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
    build(load_settings(None, input=a, output=output, build={"releases_kept": 1}))
    folder = store_folders((output / "current").resolve() / SITE)["alpha"]
    kept = tmp_path / "kept"
    shutil.copytree(output / POOL / folder, kept)
    build(load_settings(None, input=b, output=output, build={"releases_kept": 1}))
    assert not (output / POOL / folder).exists()  # B's publish deleted A's folder
    # What a kill in the middle of that deletion leaves: the folder, with some files gone.
    shutil.copytree(kept, output / POOL / folder)
    pages = sorted((output / POOL / folder).rglob("*.json"))
    assert len(pages) > 1
    pages[0].unlink()
    build(
        load_settings(None, input=a, output=output, build={"releases_kept": 1})
    )  # A again: same digest
    assert _complete(output) == []
    # A folder of that name is never written into nor adopted: the store gets one of its own,
    # and the left-over, linked by no release, is deleted after the publish.
    assert store_folders((output / "current").resolve() / SITE)["alpha"].startswith(f"{folder}-")
    assert not (output / POOL / folder).exists()


def test_a_store_folder_damaged_since_it_was_published_is_built_again(tmp_path: Path) -> None:
    inputs = write_inputs(tmp_path / "in", listings=LISTINGS)
    output = tmp_path / "out"
    first = build(load_settings(None, input=inputs, output=output)).release
    folder = output / POOL / store_folders(first / SITE)["beta"]
    page = next(folder.rglob("*.json"))
    body = page.read_bytes()
    os.unlink(page)  # damage: the same digest would carry the store over, folder and all
    second = build(load_settings(None, input=inputs, output=output))
    assert second.report.site.stores_unchanged == 1  # alpha; beta built again
    assert _complete(output) == []
    # into a folder of its own: the published one is never written into
    rebuilt = output / POOL / store_folders(second.release / SITE)["beta"]
    assert rebuilt != folder and not page.exists()
    assert (rebuilt / page.relative_to(folder)).read_bytes() == body


def test_a_release_missing_a_file_is_not_published(tmp_path: Path) -> None:
    inputs = write_inputs(tmp_path / "in", listings=LISTINGS)
    release = build(load_settings(None, input=inputs, output=tmp_path / "out")).release
    manifest = Manifest.load(release)
    folder = tmp_path / "out" / POOL / store_folders(release / SITE)["beta"]
    os.unlink(next(folder.rglob("*.json")))
    with pytest.raises(BuildError, match=r"1 files its manifest names are missing \(first: "):
        check_release(release, manifest)


def test_the_releases_kept_are_the_last_published(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Builds that start within one second have ids that sort by their random suffix: the
    newest must still be kept, not whichever id sorts last."""
    ids = iter(["20260101T000000Z-ffffff", "20260101T000000Z-888888", "20260101T000000Z-000000"])
    monkeypatch.setattr("pipeline.conductor.new_build_id", lambda: next(ids))
    settings = load_settings(
        None, input=write_inputs(tmp_path / "in", listings=LISTINGS), output=tmp_path / "out"
    )
    published = [
        build(
            settings.model_copy(
                update={"build": settings.build.model_copy(update={"releases_kept": 2})}
            )
        ).build_id
        for _ in "abc"
    ]
    kept = sorted(p.name for p in (tmp_path / "out" / "releases").iterdir())
    assert kept == sorted(published[1:])
    assert (tmp_path / "out" / "current").resolve().name == published[-1]
    assert _complete(tmp_path / "out") == []


# --- what went live ----------------------------------------------------------------------------


def test_a_release_that_never_went_live_is_neither_kept_nor_counted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full disk at the commit point: the release is complete but never went live."""
    inputs = write_inputs(tmp_path / "in", listings=LISTINGS)
    settings = load_settings(
        None, input=inputs, output=tmp_path / "out", build={"releases_kept": 2}
    )
    first = build(settings).build_id
    replace = os.replace

    def disk_full_at_the_swap(src: str, dst: str) -> None:
        if Path(dst).name == CURRENT:
            raise OSError(errno.ENOSPC, "No space left on device")
        replace(src, dst)

    monkeypatch.setattr("pipeline.publish.release.os.replace", disk_full_at_the_swap)
    with pytest.raises(OSError, match="No space left"):
        build(settings)
    monkeypatch.setattr("pipeline.publish.release.os.replace", replace)
    last = build(settings).build_id
    assert {r.name for r in (tmp_path / "out" / RELEASES).iterdir()} == {first, last}


def test_an_earlier_format_s_mark_later_than_the_live_one_is_removed_and_the_live_is_marked(
    tmp_path: Path,
) -> None:
    inputs = write_inputs(tmp_path / "in", listings=LISTINGS)
    settings = load_settings(
        None, input=inputs, output=tmp_path / "out", build={"releases_kept": 2}
    )
    output = settings.output
    first = build(settings).release
    # An earlier version marked a release before its swap, then was killed: marked later than
    # the live one, never live. Its format says its mark proves nothing.
    never = output / RELEASES / "20990101T000000Z-000000"
    shutil.copytree(first, never, symlinks=True)
    (never / FORMAT).unlink()
    (never / PUBLISHED).write_bytes(b"")
    second = build(settings).release
    assert set((output / RELEASES).iterdir()) == {first, second}
    # A kill between the swap and the mark: the live release has no mark. It is marked, with a
    # date, and counted: the next build keeps it and itself, not the first.
    (second / PUBLISHED).unlink()
    third = build(settings).release
    assert set((output / RELEASES).iterdir()) == {second, third}
    assert (second / PUBLISHED).read_text().strip()


def test_an_output_copied_with_links_followed_is_refused_in_one_line(tmp_path: Path) -> None:
    inputs = write_inputs(tmp_path / "in", listings=LISTINGS)
    build(load_settings(None, input=inputs, output=tmp_path / "out"))
    copy = tmp_path / "copy"
    shutil.copytree(tmp_path / "out", copy, symlinks=False)  # cp -rL: `current` is a folder
    releases = sorted((copy / RELEASES).iterdir())
    result = fork_cli("build", "--input", str(inputs), "--output", str(copy))
    assert result.returncode == 1, result.stderr
    assert result.stderr == (
        f"build failed: {copy / CURRENT}: a folder, not the link to the published release (was "
        "the output copied with links followed, cp -rL?): restore it with links kept (cp -a), "
        "or move current away to build on the last release published\n"
    )
    assert sorted((copy / RELEASES).iterdir()) == releases  # no release left behind


def test_build_ids_made_one_after_another_sort_in_that_order() -> None:
    """Releases and their history are ordered by id: ids made within one second (or one
    microsecond) must still sort by when they were made, never by their random suffix."""
    ids = [new_build_id() for _ in range(2000)]
    assert sorted(ids) == ids
    assert len(set(ids)) == len(ids)


def test_a_site_without_stores_and_a_relative_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    stores = write_inputs(Path("stores"), listings=LISTINGS)
    build(load_settings(None, input=stores, output=Path("out")))
    build(load_settings(None, input=write_inputs(Path("in"), listings=[]), output=Path("empty")))
    assert (tmp_path / "empty" / "manifest.json").is_file()
    # A live release without its `.published` mark (a kill between the swap and the mark)
    # must survive the next build's clean-up.
    (Path("out") / "current" / ".published").unlink()
    build(load_settings(None, input=stores, output=Path("out")))
    assert (Path("out") / "current" / "manifest.json").is_file()
