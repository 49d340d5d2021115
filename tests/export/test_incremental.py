"""A nightly rebuild writes only the files whose bytes changed, and says which."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import orjson
import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.api import urls
from pipeline.api.params import InventoryParams
from pipeline.build import build
from pipeline.settings import load_settings
from tests.support.inputs import write_inputs


def _listings(price_s2: str, with_s3: bool) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = [
        {"storeKey": "s1", "skuId": 1000, "price": "1.00", "quantity": 1},
        {"storeKey": "s1", "skuId": 1010, "price": "2.00", "quantity": 1},
        {"storeKey": "s2", "skuId": 1000, "price": price_s2, "quantity": 1},
    ]
    if with_s3:
        rows.append({"storeKey": "s3", "skuId": 1010, "price": "9.00", "quantity": 1})
    return rows


def _build_night(
    input_dir: Path,
    output: Path,
    volume: dict[str, object] | None = None,
    **tables: list[dict[str, object]],
) -> Path:
    """One nightly build of these tables (over the base catalog); returns its release."""
    inputs = write_inputs(input_dir, **tables)
    build(load_settings(None, input=inputs, output=output, build={"volume": volume or {}}))
    return (output / "current").resolve()


def test_unchanged_pages_are_linked_and_changes_are_listed(tmp_path: Path) -> None:
    output = tmp_path / "out"
    first = _build_night(tmp_path / "a", output, listings=_listings("5.00", True))
    # s3 goes: one store of three, past build.volume.max_stores_lost unless the change is real.
    real = {"max_stores_lost": 1.0}
    second = _build_night(tmp_path / "b", output, real, listings=_listings("6.00", False))
    assert first != second
    changes = orjson.loads((output / "changes.json").read_bytes())
    s2 = "v1.39.0/stores/s2/inventory/products/"
    assert changes["changed"] == [
        # s2's new price, s3's gone: the group's prices, its bulk files and their index
        "v1.39.0/bulk/1.parquet",
        "v1.39.0/bulk/1/10.csv",
        "v1.39.0/bulk/index.json",
        "v1.39.0/pricing/group/10/index.json",
        f"{s2}categoryId=1.json",
        f"{s2}groupId=10.json",
        f"{s2}index.json",
    ]
    s3 = "v1.39.0/stores/s3/inventory/"
    assert changes["removed"] == [
        f"{s3}categories/index.json",  # the store's lists of categories and groups
        f"{s3}groups/index.json",
        *(f"{s3}products/{name}.json" for name in ("categoryId=1", "groupId=10", "index")),
    ]
    unchanged = "v1.39.0/stores/s1/inventory/products/index.json"
    assert os.stat(first / "site" / unchanged).st_ino == os.stat(second / "site" / unchanged).st_ino
    changed = f"{s2}index.json"
    assert os.stat(first / "site" / changed).st_ino != os.stat(second / "site" / changed).st_ino
    report = orjson.loads((output / "build_report.json").read_bytes())
    assert report["site"]["files_unchanged"] == report["site"]["files"] - 7
    assert report["site"]["stores_unchanged"] == 1  # s1: linked without building a page

    # Other export settings: no store is carried over unbuilt, the new pages are there.
    config = tmp_path / "limits.toml"
    config.write_text("[export]\nlimits = [10, 1]\n")
    build(load_settings(config, input=tmp_path / "b", output=output))
    report = orjson.loads((output / "build_report.json").read_bytes())
    assert report["site"]["stores_unchanged"] == 0
    third = (output / "current").resolve()
    assert (third / "site" / "v1.39.0/stores/s1/inventory/products/offset=1&limit=1.json").is_file()
    assert os.stat(second / "site" / unchanged).st_ino == os.stat(third / "site" / unchanged).st_ino


def test_the_pool_keeps_the_store_folders_that_kept_releases_link_to(tmp_path: Path) -> None:
    output = tmp_path / "out"
    for night in range(4):  # s2 changes every night, s1 never
        _build_night(tmp_path / f"in{night}", output, listings=_listings(f"{5 + night}.00", True))
    releases = sorted((output / "releases").iterdir())
    assert len(releases) == 3  # releases_kept: the first night's went, and its s2 folder
    links = [
        {link.name: os.readlink(link) for link in (r / "site/v1.39.0/stores").iterdir()}
        for r in releases
    ]
    assert all(
        link.is_symlink() for r in releases for link in (r / "site/v1.39.0/stores").iterdir()
    )
    assert len({release["s1"] for release in links}) == 1  # one folder, shared
    assert len({release["s2"] for release in links}) == 3  # one a night
    pool = {p.name for p in (output / "pages").iterdir()}
    assert pool == {Path(target).name for release in links for target in release.values()}
    page = output / "site/v1.39.0/stores/s2/inventory/products/index.json"
    assert '"lowestPrice":8.0' in page.read_text()


def test_a_catalog_change_rebuilds_the_stores_that_list_the_product(tmp_path: Path) -> None:
    from tests.support.inputs import BASE_TABLES

    output = tmp_path / "out"
    listings = _listings("5.00", True)
    _build_night(tmp_path / "a", output, listings=listings)
    renamed = [dict(p) for p in BASE_TABLES["products"]]
    renamed[0]["name"] = "Sol Ring (Renamed)"  # product 100, listed by s1 and s2 only
    _build_night(tmp_path / "b", output, listings=listings, products=renamed)
    report = orjson.loads((output / "build_report.json").read_bytes())
    assert report["site"]["stores_unchanged"] == 1  # s3 lists another product
    page = output / "site" / "v1.39.0/stores/s1/inventory/products/index.json"
    assert "Sol Ring (Renamed)" in page.read_text()


@settings(max_examples=300, deadline=None)
@given(
    channel=st.integers(0, 3),
    category=st.none() | st.integers(-(2**31), 2**31 - 1),
    group=st.none() | st.integers(-(2**63) + 1, 2**63 - 1),
    limit=st.integers(1, 100),
    pages=st.integers(0, 5),
)
def test_page_names_equal_the_canonical_path(
    channel: int, category: int | None, group: int | None, limit: int, pages: int
) -> None:
    params = InventoryParams(channelId=channel, categoryId=category, groupId=group, limit=limit)
    expected = [
        str(urls.inventory_page_path("Key", replace(params, offset=n * limit)))
        for n in range(pages)
    ]
    query = urls.canonical_query(params, paging=False)
    names = pl.select(urls.page_names(pl.lit(query), pl.int_range(pages), limit)).to_series()
    folder = "v1.39.0/stores/key/inventory/products/"
    assert [folder + name for name in names.to_list()] == expected
    # The exporter's templates of a filter by one id give the same canonical query.
    for name, value in (("categoryId", category), ("groupId", group)):
        if value is not None:
            before, after = urls.filtered_query(channel, name)
            alone = InventoryParams(channelId=channel, **{name: value})  # type: ignore[arg-type]
            assert f"{before}{value}{after}" == urls.canonical_query(alone, paging=False)
