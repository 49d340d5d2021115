"""The previous release's state is verified before it is trusted: a truncated or flipped file
never stops later builds nor leaks into their manifests; the build starts afresh and says why.
A release of another state format lends its history alone: its pages are built again, with
one warning."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

import duckdb
import pytest

from pipeline.build import build
from pipeline.export.records.manifest import Manifest
from pipeline.export.records.state import STATE_FORMAT
from pipeline.paths import (
    CHANGES,
    FORMAT,
    HISTORY,
    MANIFEST,
    MANIFEST_PARQUET,
    PUBLISHED,
    REPORT_JSON,
    SEAL,
    SITE,
    STAT,
    STORES,
    WAREHOUSE,
)
from pipeline.settings import load_settings
from tests.support.damage import flip_a_bit, truncate
from tests.support.inputs import write_inputs
from tests.support.runs import site_hashes

LISTINGS = [
    {"storeKey": "alpha", "skuId": 1000, "price": "3.00", "quantity": 2},
    {"storeKey": "beta", "skuId": 1001, "price": "1.25", "quantity": 4},
]
CHANGED = [LISTINGS[0], {**LISTINGS[1], "price": "2.50"}]  # beta dearer, alpha as it was
# The `changes.json` of a clean night from `LISTINGS` to `CHANGED`: beta's pages, the group's
# prices and bulk files and their index; alpha's pages are not among them.
CLEAN_CHANGES = b"""{"changed":[
"v1.39.0/bulk/1.parquet",
"v1.39.0/bulk/1/10.csv",
"v1.39.0/bulk/index.json",
"v1.39.0/pricing/group/10/index.json",
"v1.39.0/stores/beta/inventory/products/categoryId=1.json",
"v1.39.0/stores/beta/inventory/products/groupId=10.json",
"v1.39.0/stores/beta/inventory/products/index.json"
],
"removed":[]}
"""


def _format_three(path: Path) -> None:
    path.write_text("3\n")


@pytest.mark.parametrize(
    ("name", "damage"),
    [
        (STORES, truncate),
        (STAT, truncate),
        (STORES, flip_a_bit),
        (FORMAT, _format_three),  # a format this version does not know is not trusted either
    ],
)
def test_a_damaged_previous_release_is_rebuilt_from_scratch_and_said(
    tmp_path: Path, name: str, damage: Callable[[Path], None]
) -> None:
    output = tmp_path / "out"
    first = build(
        load_settings(None, input=write_inputs(tmp_path / "a", listings=LISTINGS), output=output)
    ).release
    damage(first / name)
    # beta changes, alpha would be carried over from the damaged release
    changed = CHANGED
    second = build(
        load_settings(None, input=write_inputs(tmp_path / "b", listings=changed), output=output)
    )
    [warning] = second.report.build_warnings
    if name == FORMAT:
        assert warning.startswith(f"{first}: state format 3, not this version's {STATE_FORMAT}; ")
    else:
        assert warning.startswith(f"{first / name}: ")
    assert "; every store's pages are built again" in warning
    manifest = Manifest.load(second.release).frame
    listed = dict(zip(manifest["path"], manifest["sha256"].bin.encode("hex"), strict=True))
    assert listed == site_hashes(second.release / SITE)
    if name == FORMAT:  # nothing of it trusted: the changes are against no release
        assert second.report.site.files_unchanged == 0
    else:  # its manifest is whole: the changes are against it, as a clean night's
        assert (second.release / CHANGES).read_bytes() == CLEAN_CHANGES
    # and the next build trusts the new release again
    third = build(
        load_settings(None, input=write_inputs(tmp_path / "b", listings=changed), output=output)
    )
    assert third.report.build_warnings == []
    assert third.report.site.files_unchanged == third.report.site.files
    assert (third.release / MANIFEST).read_bytes() == (second.release / MANIFEST).read_bytes()


@pytest.mark.parametrize("damage", [truncate, flip_a_bit])
def test_a_damaged_manifest_parquet_is_read_from_manifest_json_and_the_changes_stay_true(
    tmp_path: Path, damage: Callable[[Path], None]
) -> None:
    """The previous release's manifest.json makes the very Parquet its seal names: it is read
    instead, with one warning, and nothing is lost (its pages are carried, changes.json lists
    the changed pages only). With manifest.json damaged too, the warning says that
    changes.json lists every page."""
    output = tmp_path / "out"
    first = build(
        load_settings(None, input=write_inputs(tmp_path / "a", listings=LISTINGS), output=output)
    ).release
    damage(first / MANIFEST_PARQUET)
    changed = CHANGED
    second = build(
        load_settings(None, input=write_inputs(tmp_path / "b", listings=changed), output=output)
    )
    assert second.report.build_warnings == [
        f"{first / MANIFEST_PARQUET}: damaged since it was published (its SHA-256 is not the one "
        f"in {SEAL}); read from its {MANIFEST} instead, which its seal vouches for"
    ]
    assert (second.release / CHANGES).read_bytes() == CLEAN_CHANGES
    assert 0 < second.report.site.files_unchanged < second.report.site.files  # alpha carried

    damage(second.release / MANIFEST_PARQUET)
    damage(second.release / MANIFEST)
    third = build(
        load_settings(None, input=write_inputs(tmp_path / "b", listings=changed), output=output)
    )
    [warning] = third.report.build_warnings
    assert warning.startswith(f"{second.release / MANIFEST_PARQUET}: damaged since it was ")
    assert warning.endswith(
        "; every store's pages are built again, and changes.json lists every page as changed "
        "(compared with no release)"
    )
    assert third.report.site.files_unchanged == 0


def test_a_release_that_lost_its_seal_is_not_trusted(tmp_path: Path) -> None:
    """A release published with a seal (its mark has a date) that has none any more: nothing
    of its state is read; a flipped byte cannot pass by deleting the seal."""
    inputs = write_inputs(tmp_path / "a", listings=LISTINGS)
    output = tmp_path / "out"
    first = build(load_settings(None, input=inputs, output=output)).release
    flip_a_bit(first / STORES)
    (first / SEAL).unlink()
    second = build(load_settings(None, input=inputs, output=output))
    problem = f"{first / SEAL}: missing (the release was published with one)"
    assert second.report.build_warnings == [  # in the order the build met them
        f"{problem}; the volumes are not compared with it",
        f"{problem}; every store's pages are built again, and changes.json lists every page "
        "as changed (compared with no release)",
        f"{problem}; meta.build_run carried on from {first / WAREHOUSE}",  # as it was
    ]
    con = duckdb.connect(str(output / WAREHOUSE), read_only=True)
    assert con.execute("SELECT count(*) FROM meta.build_run").fetchall() == [(2,)]
    con.close()
    assert second.report.site.files_unchanged == 0


def test_a_deleted_report_is_said_and_the_volumes_are_not_compared(tmp_path: Path) -> None:
    output = tmp_path / "out"
    first = build(
        load_settings(None, input=write_inputs(tmp_path / "a", listings=LISTINGS), output=output)
    ).release
    (first / REPORT_JSON).unlink()
    settings = load_settings(
        None,
        input=write_inputs(tmp_path / "b", listings=LISTINGS[:1]),
        output=output,
        # The stores lost are guarded by the stores' records (sealed, intact), not the report.
        build={"volume": {"min_count": 1, "max_stores_lost": 1.0}},
    )
    second = build(settings)  # half the listings: published, with the reason it was not compared
    assert second.report.build_warnings == [
        f"{first / REPORT_JSON}: missing (sealed in {SEAL}); the volumes are not compared with it"
    ]


def _history(output: Path) -> list[str]:
    con = duckdb.connect(str(output / WAREHOUSE), read_only=True)
    try:
        return [r[0] for r in con.execute("SELECT build_id FROM meta.build_run").fetchall()]
    finally:
        con.close()


def _sealed_without_format(release: Path) -> None:
    """As the version before the state format published a release: sealed, no `format`."""
    (release / FORMAT).unlink()
    lines = (release / SEAL).read_text().splitlines(keepends=True)
    (release / SEAL).write_text(
        "".join(line for line in lines if not line.endswith(f" {FORMAT}\n"))
    )


def _format_one(release: Path) -> None:
    """A release whose `format` names an earlier format (and sealed so)."""
    (release / FORMAT).write_text("1\n")
    lines = (release / SEAL).read_text().splitlines(keepends=True)
    digest = hashlib.sha256(b"1\n").hexdigest()
    (release / SEAL).write_text(
        "".join(
            f"{digest}  {FORMAT}\n" if line.endswith(f" {FORMAT}\n") else line for line in lines
        )
    )


def _before_the_seal(release: Path) -> None:
    """As versions before the seal published a release: no seal, no format, no files' stats,
    the manifest as JSON only, no history file (the warehouse holds it, without the columns
    added since), and a mark without a date."""
    for name in (SEAL, FORMAT, STAT, MANIFEST_PARQUET, HISTORY):
        (release / name).unlink()
    (release / PUBLISHED).write_bytes(b"")
    con = duckdb.connect(str(release / WAREHOUSE))
    for column in ("files_changed", "volume_change_accepted"):
        con.execute(f"ALTER TABLE meta.build_run DROP COLUMN {column}")
    con.close()


@pytest.mark.parametrize("age", [_sealed_without_format, _format_one, _before_the_seal])
def test_a_release_of_an_earlier_format_lends_its_history_and_its_pages_are_built_again(
    tmp_path: Path, age: Callable[[Path], None]
) -> None:
    """One rule for every earlier layout: one warning naming the release and its format, every
    page built again (nothing carried, nothing linked), the history carried on whole."""
    output = tmp_path / "out"
    settings = load_settings(
        None, input=write_inputs(tmp_path / "a", listings=LISTINGS), output=output
    )
    first = build(settings)
    age(first.release)
    second = build(settings)
    assert second.report.build_warnings == [
        f"{first.release}: state format 1, not this version's {STATE_FORMAT}; every store's "
        "pages are built again and the volumes are not compared with it; its history is "
        "carried on"
    ]
    assert second.report.site.files_unchanged == 0
    assert second.report.site.stores_unchanged == 0
    assert sorted(_history(output)) == sorted([first.build_id, second.build_id])
    assert (second.release / FORMAT).read_text() == f"{STATE_FORMAT}\n"
    manifest = Manifest.load(second.release).frame
    listed = dict(zip(manifest["path"], manifest["sha256"].bin.encode("hex"), strict=True))
    assert listed == site_hashes(second.release / SITE)
    # The release it wrote is of this format: trusted by the next build, pages carried.
    third = build(settings)
    assert third.report.build_warnings == []
    assert third.report.site.files_unchanged == third.report.site.files
    assert len(_history(output)) == 3
