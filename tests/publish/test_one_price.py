"""A night in which one listing's price moves, published to a bucket: it uploads that store's
new version, the versions of the groups and categories whose files moved, the bulk files'
index, and the release's documents; nothing else. Counted by key prefix in the test server's
request log."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import polars as pl

from pipeline.build import build
from pipeline.export.records.manifest import Manifest
from pipeline.publish.bucket import LEASE, POINTER, RELEASES
from pipeline.publish.objectstore import publish_release
from pipeline.settings import load_settings
from pipeline.tools.generate import generate
from tests.support.bucket import FEW_PAGES, Build, check_bucket, unit_of
from tests.support.s3 import S3Server


def move_one_price(inputs: Path) -> str:
    """The first listing of the generated input at its lowest possible price (so its product's
    market figures move); its store's key."""
    part = inputs / "stores" / "listings" / "part-000.parquet"
    listings = pl.read_parquet(part).with_row_index()
    listings.with_columns(
        price=pl.when(pl.col("index") == 0).then(0.01).otherwise(pl.col("price"))
    ).drop("index").write_parquet(part)
    return str(listings["storeKey"][0])


def test_a_night_with_one_moved_price_uploads_only_what_moved(s3: S3Server, tmp_path: Path) -> None:
    generate(tmp_path / "in", 6, 240, seed=5)
    export = {**FEW_PAGES, "bulk_files": True}
    settings = load_settings(None, input=tmp_path / "in", output=tmp_path / "out", export=export)
    url = s3.bucket("one-price")
    first = build(settings).release
    publish_release(first, url)
    store = move_one_price(tmp_path / "in")
    second = build(settings).release
    before = len(s3.puts(url))
    published = publish_release(second, url)
    written = s3.puts(url)[before:]

    # What moved, from the two local manifests: the store, some groups and categories, the
    # bulk index; no common file.
    changed, removed = Manifest.load(second).changes(Manifest.load(first))
    moved = {unit_of(p) for p in changed.to_list()}
    assert removed.to_list() == []
    assert "common" not in moved and f"stores/{store}" in moved
    assert {u.split("/")[0] for u in moved} == {"stores", "groups", "categories", "bulk"}
    # Each moved version is uploaded whole (each of its files and its part), once.
    files: dict[str, int] = defaultdict(int)
    for path in Manifest.load(second).frame["path"]:
        files[unit_of(path)] += 1
    by_unit: dict[str, list[str]] = defaultdict(list)
    documents = f"{RELEASES}{published.release}/"
    for key in written:
        if key in (LEASE, POINTER) or key.startswith(documents):
            continue
        by_unit["/".join(key.split("/")[:2])].append(key)
    assert set(by_unit) == moved
    assert {u: len(k) for u, k in by_unit.items()} == {u: files[u] + 1 for u in moved}
    assert len(moved) < len(files) / 3  # far from everything
    assert check_bucket(url, {r.name: Build.of(r) for r in (first, second)}) == second.name
