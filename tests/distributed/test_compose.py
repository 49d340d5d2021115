"""A bucket night's release files composed on disk are the bytes the in-memory manifest writes."""

from __future__ import annotations

import hashlib
from pathlib import Path

import polars as pl
import pytest

from pipeline.distributed import compose
from pipeline.distributed.compose import compose_release_files
from pipeline.export.records import manifest as manifest_module
from pipeline.export.records.manifest import Manifest, file_counts, write_changes
from pipeline.paths import CHANGES, MANIFEST, MANIFEST_PARQUET


def _rows(paths: list[str], salt: str) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "path": paths,
            "sha256": [hashlib.sha256((p + salt).encode()).digest() for p in paths],
            "bytes": [len(p) * 7 + len(salt) for p in paths],
        }
    ).sort("path")


def _store(key: str, pages: int) -> list[str]:
    return [f"v1.39.0/stores/{key}/inventory/products/offset={i}.json" for i in range(pages)]


@pytest.mark.parametrize("chunk", [3, 100_000])
def test_the_composed_files_are_the_in_memory_manifests_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    """Shard parts and a previous release: stores rendered again (one the same, one changed),
    carried (rows from the previous release), gone (removed), new, and the common pages;
    cut into batches of 3 rows or taken whole, the same bytes and counts: `manifest.parquet`
    too (one writer, whatever the row groups)."""
    monkeypatch.setattr(compose, "ROWS", chunk)
    monkeypatch.setattr(manifest_module, "CHUNK", chunk)
    monkeypatch.setattr(manifest_module, "ROW_GROUP", min(chunk * 2, 100_000))
    common = ["v1.39.0/catalog/categories/index.json", "v1.39.0/help/index.html"]
    previous = _rows(common + _store("a", 4) + _store("b", 5) + _store("c", 3) + _store("g", 2), "")
    part_0 = _rows(common + _store("a", 4), "")  # a: rendered again, the same bytes
    part_1 = pl.concat([_rows(_store("b", 6), "new"), _rows(_store("n", 2), "")]).sort("path")
    folders = []
    for i, part in enumerate((part_0, part_1)):
        folders.append(tmp_path / f"part-{i}" / MANIFEST_PARQUET)
        folders[-1].parent.mkdir()
        part.write_parquet(folders[-1], statistics=False)
    base = tmp_path / "previous.parquet"
    previous.write_parquet(base, statistics=False)

    counts = compose_release_files(
        tmp_path / "composed", folders, base, ["a", "b", "c", "n"], "256MB"
    )

    expected = tmp_path / "expected"
    expected.mkdir()
    carried = previous.filter(pl.col("path").str.starts_with("v1.39.0/stores/c/"))
    whole = Manifest(pl.concat([part_0, part_1, carried]))
    whole.write(expected)
    changed, removed = whole.changes(Manifest(previous))
    write_changes(expected / CHANGES, changed, removed)
    for name in (MANIFEST, MANIFEST_PARQUET, CHANGES):
        assert (tmp_path / "composed" / name).read_bytes() == (expected / name).read_bytes()
    assert pl.read_parquet(tmp_path / "composed" / MANIFEST_PARQUET).equals(whole.frame)
    assert whole.parquet() == (expected / MANIFEST_PARQUET).read_bytes()
    assert counts == file_counts(whole, changed, removed)
    assert counts["files_removed"] == 2 and len(changed) == 8  # g's pages; b's and n's


def test_a_first_night_a_night_without_versions_and_a_path_twice(
    tmp_path: Path,
) -> None:
    part = tmp_path / "part" / MANIFEST_PARQUET
    part.parent.mkdir()
    _rows(_store("a", 2), "").write_parquet(part)
    counts = compose_release_files(tmp_path / "first", [part], None, ["a"], "256MB")
    assert counts["files"] == counts["files_unchanged"] + 2 == 2
    assert (tmp_path / "first" / CHANGES).read_bytes().count(b"v1.39.0/stores/a/") == 2
    nothing = compose_release_files(tmp_path / "none", [part], part, [], "256MB")
    assert nothing == {"files": 2, "files_unchanged": 2, "files_removed": 0, "bytes": 686}
    with pytest.raises(ValueError, match="the same file twice in one site"):
        compose_release_files(tmp_path / "twice", [part, part], None, ["a"], "256MB")
