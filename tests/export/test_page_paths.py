"""Hostile path values: a page's path never leaves its store's folder, and a store key that
would is rejected and writes nothing."""

from __future__ import annotations

from pathlib import Path

import duckdb
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.api import urls
from pipeline.api.params import InventoryParams
from pipeline.build import build
from pipeline.settings import load_settings
from tests.support.inputs import write_inputs
from tests.support.runs import rows


@settings(max_examples=100, deadline=None)
@given(
    key=st.from_regex(r"[A-Za-z0-9_-]{1,64}", fullmatch=True),
    name=st.text(min_size=1, max_size=20),
    number=st.integers(-(2**31), 2**31 - 1),
    sort=st.sampled_from(["price asc", "name desc"]),
)
def test_page_paths_never_leave_the_store_directory(
    key: str, name: str, number: int, sort: str
) -> None:
    params = InventoryParams(
        categoryName=name, productName=name, groupName=name, categoryId=number, sort=sort
    )
    path = urls.inventory_page_path(key, params)
    assert path.parts[:5] == ("v1.39.0", "stores", key.lower(), "inventory", "products")
    assert len(path.parts) == 6 and path.name not in (".", "..") and "/" not in path.name
    assert not path.is_absolute()


def test_hostile_store_keys_are_rejected_and_write_nothing(tmp_path: Path) -> None:
    hostile = ["../../escape", "..", "a/b", "/abs", "a\\b", "%2e%2e", "x" * 65, "nul\x00"]
    listings = [{"storeKey": k, "skuId": 1000, "price": "1", "quantity": 1} for k in hostile]
    listings.append({"storeKey": "fine", "skuId": 1000, "price": "1", "quantity": 1})
    output = tmp_path / "nested" / "out"
    config = tmp_path / "lenient.toml"
    config.write_text("[build]\nmax_reject_share = 1.0\n")
    build(
        load_settings(config, input=write_inputs(tmp_path / "in", listings=listings), output=output)
    )
    stores = sorted(p.name for p in (output / "site" / "v1.39.0" / "stores").iterdir())
    assert stores == ["fine"]
    assert sorted(p.name for p in (tmp_path / "nested").iterdir()) == ["out"]
    con = duckdb.connect(str(output / "warehouse.duckdb"), read_only=True)
    assert rows(con, "SELECT count(*) FROM meta.rejects WHERE column_name = 'storeKey'") == [
        (len(hostile),)
    ]
    con.close()
