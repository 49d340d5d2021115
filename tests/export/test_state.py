"""The previous release's state is verified before it is trusted: a truncated or flipped file
never stops later builds nor leaks into their manifests; the build starts afresh and says why."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

import duckdb
import pytest

from pipeline.build import build
from pipeline.export.records.manifest import Manifest
from pipeline.paths import (
    MANIFEST,
    MANIFEST_PARQUET,
    PUBLISHED,
    REPORT_JSON,
    SEAL,
    SITE,
    STORES,
    WAREHOUSE,
)
from pipeline.settings import load_settings
from tests.conftest import site_files, write_inputs

LISTINGS = [
    {"storeKey": "alpha", "skuId": 1000, "price": "3.00", "quantity": 2},
    {"storeKey": "beta", "skuId": 1001, "price": "1.25", "quantity": 4},
]


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _flip(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))


def _true_manifest(release: Path) -> dict[str, str]:
    """path -> SHA-256 of every file of the release's site, as read from the files."""
    return {
        name: hashlib.sha256(path.read_bytes()).hexdigest()
        for name, path in site_files(release / SITE).items()
    }


@pytest.mark.parametrize(
    ("name", "damage", "sealed"),
    [
        (MANIFEST_PARQUET, _truncate, True),
        (MANIFEST_PARQUET, _truncate, False),  # a release from before the seal
        (STORES, _truncate, True),
        (STORES, _truncate, False),
        (MANIFEST_PARQUET, _flip, True),
        (STORES, _flip, True),
    ],
)
def test_a_damaged_previous_release_is_rebuilt_from_scratch_and_said(
    tmp_path: Path, name: str, damage: Callable[[Path], None], sealed: bool
) -> None:
    output = tmp_path / "out"
    first = build(
        load_settings(None, input=write_inputs(tmp_path / "a", listings=LISTINGS), output=output)
    ).release
    damage(first / name)
    if not sealed:  # as an earlier version published it: no seal, a mark without a date
        (first / SEAL).unlink()
        (first / PUBLISHED).write_bytes(b"")
    # beta changes, alpha would be carried over from the damaged release
    changed = [LISTINGS[0], {**LISTINGS[1], "price": "2.50"}]
    second = build(
        load_settings(None, input=write_inputs(tmp_path / "b", listings=changed), output=output)
    )
    [warning] = second.report.build_warnings
    assert warning.startswith(f"{first / name}: ")
    assert warning.endswith("; every store's pages are built again")
    manifest = Manifest.load(second.release).frame
    listed = dict(zip(manifest["path"], manifest["sha256"].bin.encode("hex"), strict=True))
    assert listed == _true_manifest(second.release)
    assert second.report.site.files_unchanged == 0  # nothing carried: compared with none
    # and the next build trusts the new release again
    third = build(
        load_settings(None, input=write_inputs(tmp_path / "b", listings=changed), output=output)
    )
    assert third.report.build_warnings == []
    assert third.report.site.files_unchanged == third.report.site.files
    assert (third.release / MANIFEST).read_bytes() == (second.release / MANIFEST).read_bytes()


def test_a_release_that_lost_its_seal_is_not_trusted(tmp_path: Path) -> None:
    """A release published with a seal (its mark has a date) that has none any more: nothing
    of its state is read; a flipped byte cannot pass by deleting the seal."""
    inputs = write_inputs(tmp_path / "a", listings=LISTINGS)
    output = tmp_path / "out"
    first = build(load_settings(None, input=inputs, output=output)).release
    _flip(first / STORES)
    (first / SEAL).unlink()
    second = build(load_settings(None, input=inputs, output=output))
    problem = f"{first / SEAL}: missing (the release was published with one)"
    assert second.report.build_warnings == [  # in the order the build met them
        f"{problem}; the volumes are not compared with it",
        f"{problem}; every store's pages are built again",
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
        volume={"min_count": 1, "max_stores_lost": 1.0},
    )
    second = build(settings)  # half the listings: published, with the reason it was not compared
    assert second.report.build_warnings == [
        f"{first / REPORT_JSON}: missing (sealed in {SEAL}); the volumes are not compared with it"
    ]
