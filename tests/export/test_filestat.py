"""A page changed on disk after it was published is never carried into a later release: each
release records its files' size, mtime and inode (`stat.parquet`), and the next build carries
a store's folder, or links a file, only when a stat of it still gives the record."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import polars as pl
import pytest

from pipeline.build import build
from pipeline.export.records import filestat
from pipeline.export.records.manifest import Manifest
from pipeline.paths import SITE, STAT
from pipeline.settings import load_settings
from tests.support.inputs import write_inputs
from tests.support.runs import site_hashes

LISTINGS = [
    {"storeKey": "s1", "skuId": 1000, "price": "1.00", "quantity": 1},
    {"storeKey": "s2", "skuId": 1001, "price": "2.00", "quantity": 1},
    {"storeKey": "s3", "skuId": 1000, "price": "3.00", "quantity": 2},
    {"storeKey": "s3", "skuId": 1010, "price": "4.00", "quantity": 1},
]
# s3 changes, but not its channel-0 pages: their bytes, and so their expected sha256, stay.
S3_CHANGED = [
    *LISTINGS,
    {"storeKey": "s3", "channelId": 1, "skuId": 1001, "price": "5.00", "quantity": 1},
]
PAGE = "v1.39.0/stores/s3/inventory/products/index.json"
DAMAGE = b'{"success":true,"errors":[],"results":[]}'


def _overwrite(path: Path) -> None:
    """As in the issue: `printf ... > file`, the same inode, other bytes and size."""
    path.write_bytes(DAMAGE)


def _replace_keeping_size_and_mtime(path: Path) -> None:
    """A new inode with bytes of the same size and the old mtime: only the inode tells."""
    before = path.stat()
    spare = path.with_name(".spare")
    spare.write_bytes(b" " * before.st_size)
    os.utime(spare, ns=(before.st_atime_ns, before.st_mtime_ns))
    os.replace(spare, path)


def _mismatches(release: Path) -> list[str]:
    """The files of the release's site whose bytes are not those its manifest names."""
    manifest = Manifest.load(release).frame
    listed = dict(zip(manifest["path"], manifest["sha256"].bin.encode("hex"), strict=True))
    found = site_hashes(release / SITE)
    assert sorted(found) == sorted(listed)
    return sorted(name for name in listed if listed[name] != found[name])


@pytest.mark.parametrize("damage", [_overwrite, _replace_keeping_size_and_mtime])
def test_a_page_changed_on_disk_is_never_carried_into_a_later_release(
    tmp_path: Path, damage: Callable[[Path], None]
) -> None:
    output = tmp_path / "out"
    inputs = write_inputs(tmp_path / "in", listings=LISTINGS)
    first = build(load_settings(None, input=inputs, output=output)).release
    assert (first / STAT).is_file()
    damage((first / SITE / PAGE).resolve())
    assert _mismatches(first) == [PAGE]  # the published release, damaged under it

    # The same input: s3 is not carried over, it is built again; s1 and s2 are carried.
    second = build(load_settings(None, input=inputs, output=output))
    assert _mismatches(second.release) == []
    assert second.report.site.stores_unchanged == 2
    assert second.report.build_warnings == []
    # Its other pages are still linked: only the changed file is written again.
    other = "v1.39.0/stores/s3/inventory/products/groupId=10.json"
    assert os.stat(first / SITE / other).st_ino == os.stat(second.release / SITE / other).st_ino
    assert os.stat(first / SITE / PAGE).st_ino != os.stat(second.release / SITE / PAGE).st_ino
    # and the night after carries the store built again, whole
    third = build(load_settings(None, input=inputs, output=output))
    assert third.report.site.stores_unchanged == 3
    assert _mismatches(third.release) == []
    assert (third.release / SITE / PAGE).resolve() == (second.release / SITE / PAGE).resolve()


@pytest.mark.parametrize("damage", [_overwrite, _replace_keeping_size_and_mtime])
def test_a_page_changed_on_disk_is_not_linked_when_its_store_changes(
    tmp_path: Path, damage: Callable[[Path], None]
) -> None:
    """s3 changes but not its channel-0 pages: the damaged page's expected sha256 is the
    previous manifest's, yet the file is written afresh, not linked."""
    output = tmp_path / "out"
    first = build(
        load_settings(None, input=write_inputs(tmp_path / "in", listings=LISTINGS), output=output)
    ).release
    damage((first / SITE / PAGE).resolve())
    changed = write_inputs(tmp_path / "changed", listings=S3_CHANGED)
    second = build(load_settings(None, input=changed, output=output))
    assert second.report.site.stores_unchanged == 2
    assert _mismatches(second.release) == []
    # (that the night after carries a store built again, whole: the test above)


def test_a_damaged_common_page_is_written_again(tmp_path: Path) -> None:
    """A page outside the stores' folders (the categories listing) is linked file by file:
    only when a stat of it equals its record."""
    output = tmp_path / "out"
    inputs = write_inputs(tmp_path / "in", listings=LISTINGS)
    first = build(load_settings(None, input=inputs, output=output)).release
    page = "v1.39.0/catalog/categories/index.json"
    _overwrite(first / SITE / page)
    second = build(load_settings(None, input=inputs, output=output)).release
    assert _mismatches(second) == []


def test_the_records_are_each_file_as_written(tmp_path: Path) -> None:
    output = tmp_path / "out"
    inputs = write_inputs(tmp_path / "in", listings=LISTINGS)
    for _ in range(2):  # the second release carries every store: its records are the first's
        release = build(load_settings(None, input=inputs, output=output)).release
        records = filestat.load(release)
        manifest = Manifest.load(release).frame
        assert records["path"].to_list() == manifest["path"].to_list()
        now = filestat.stat_files(release / SITE, manifest["path"].to_list())
        assert records.equals(now)
        assert records["size"].to_list() == manifest["bytes"].to_list()
    assert records.schema == pl.Schema(filestat.SCHEMA)
