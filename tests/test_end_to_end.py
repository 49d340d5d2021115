"""The shipped sample, built end to end: golden pages, the manifest, valid pages, and for every
store the default pages list exactly the products docs/contract.md §4 defines."""

from __future__ import annotations

import fnmatch
import hashlib
import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from pydantic import BaseModel

from pipeline.api import urls
from pipeline.api.models import CategoryPage, InventoryPage
from pipeline.api.params import InventoryParams
from tests.support import reference
from tests.support.golden import FULL_PAGES, GOLDEN
from tests.support.inputs import SAMPLE
from tests.support.runs import site_files


def test_build_publishes_warehouse_site_manifest_and_report(sample_build: Path) -> None:
    assert (sample_build / "warehouse.duckdb").is_file()
    assert (sample_build / "current").is_symlink()
    manifest = orjson.loads((sample_build / "manifest.json").read_bytes())
    files = site_files(sample_build / "site")
    assert [f["path"] for f in manifest["files"]] == sorted(files)
    for entry in manifest["files"]:
        body = files[entry["path"]].read_bytes()
        assert (hashlib.sha256(body).hexdigest(), len(body)) == (entry["sha256"], entry["bytes"])
    report = orjson.loads((sample_build / "build_report.json").read_bytes())
    assert report["tables"]["listings"]["rejected"] == 0
    assert report["warnings"] == [
        {
            "table": "skus",
            "file": "catalog/skus.parquet",
            "column": "conditionId",
            "reason": "unknown conditionId (published with a null name)",
            "rows": 1,
            "first_rows": [10793],  # the Parquet file's one row of conditionId 7
        }
    ]
    assert "<h1>Build " in (sample_build / "build_report.html").read_text()
    parts = {part for p in site_files(sample_build / "site") for part in p.split("/")}
    assert not fnmatch.filter(parts, "*store*list*"), "no index of store keys"


def test_pages_match_the_golden_files(sample_build: Path) -> None:
    """Every published file, by its hash and size in the golden manifest."""
    golden = orjson.loads((GOLDEN / "manifest.json").read_bytes())
    built = orjson.loads((sample_build / "manifest.json").read_bytes())
    changed = sorted(
        {f["path"] for f in golden["files"]} ^ {f["path"] for f in built["files"]}
        | {g["path"] for g, b in zip(golden["files"], built["files"], strict=False) if g != b}
    )
    assert changed == [], "pages differ from tests/golden (run `make golden` if intended)"


@pytest.mark.parametrize("page", FULL_PAGES)
def test_golden_pages_are_the_built_pages(sample_build: Path, page: str) -> None:
    """The pages stored whole: named by the golden manifest with their own hash and size, and
    byte for byte the page the sample builds (decoded, so that a failure shows the text)."""
    golden = GOLDEN / "site" / page
    assert golden.is_file(), "run `make golden`"
    body = golden.read_bytes()
    entries = {f["path"]: f for f in orjson.loads((GOLDEN / "manifest.json").read_bytes())["files"]}
    assert page in entries, "the golden manifest does not name this page: run `make golden`"
    assert (entries[page]["sha256"], entries[page]["bytes"]) == (
        hashlib.sha256(body).hexdigest(),
        len(body),
    ), "the golden page and the golden manifest disagree: run `make golden`"
    assert (sample_build / "site" / page).read_bytes().decode() == body.decode()


def _key_order_ok(value: Any, model: type[BaseModel]) -> None:
    """Keys appear in the order of the model's fields (absent optional keys skipped)."""
    order = list(model.model_fields)
    assert list(value) == [k for k in order if k in value], (list(value), order)


def test_every_page_validates_against_the_models(sample_build: Path) -> None:
    from pipeline.api import catalog
    from pipeline.api.catalog_models import CATALOG_ITEMS
    from pipeline.api.catalog_models import responses as catalog_responses
    from pipeline.api.models import (
        OPERATION_RESPONSES,
        Category,
        Condition,
        Language,
        Sku,
        StoreCategory,
        StoreGroup,
        StoreProduct,
    )

    pages = {
        p: f
        for p, f in site_files(sample_build / "site").items()
        if p.endswith(".json") and "/help/" not in p and not p.startswith(urls.BULK_DIR)
    }
    assert len(pages) > 300
    for path, file in pages.items():
        body = file.read_bytes()
        assert (
            not body.endswith(b"\n")
            and b'": ' not in body
            and b"\\u00" not in body.replace(b"\\u0001", b"")
        )
        operation = catalog.match("/" + path.rpartition("/")[0])
        if operation is not None:  # a catalog or price operation's page
            op = operation[0]
            catalog_responses(op.operation_id, op.form)[0].model_validate_json(body)
            item = CATALOG_ITEMS[op.operation_id]
            for value in json.loads(body)["results"]:
                _key_order_ok(value, item)
            continue
        if "/catalog/categories/" in path:
            CategoryPage.model_validate_json(body)
            for item in json.loads(body)["results"]:
                _key_order_ok(item, Category)
            continue
        if "/inventory/categories/" in path or "/inventory/groups/" in path:
            groups = "/inventory/groups/" in path
            model = OPERATION_RESPONSES["Stores_GetStore" + ("Groups" if groups else "Categories")]
            model.model_validate_json(body)
            for item in json.loads(body)["results"]:
                _key_order_ok(item, StoreGroup if groups else StoreCategory)
            continue
        page = InventoryPage.model_validate_json(body)
        assert len(page.results) <= 10
        raw = json.loads(body)
        assert list(raw) == ["totalItems", "success", "errors", "results"]
        for product in raw["results"]:
            _key_order_ok(product, StoreProduct)
            assert len(product["skus"]) <= 3
            for sku in product["skus"]:
                _key_order_ok(sku, Sku)
                _key_order_ok(sku["condition"], Condition)
                _key_order_ok(sku["language"], Language)


def test_default_pages_list_exactly_the_products_of_the_definition(sample_build: Path) -> None:
    """docs/contract.md §4 by the independent reference, read straight from the sample's input files."""
    data = reference.load_directory(SAMPLE)
    files = site_files(sample_build / "site")
    stores_with_pages = 0
    for store in sorted(data.known_stores()):
        for channel in (0, 1):
            expected = reference.products_for(data, store, reference.Request(channelId=channel))
            listed: list[Any] = []
            offset = 0
            while True:
                params = InventoryParams(channelId=channel, offset=offset)
                path = urls.inventory_page_path(store, params).as_posix()
                if path not in files:
                    break
                page = json.loads(files[path].read_bytes())
                assert page["totalItems"] == len(expected)
                listed += page["results"]
                offset += 10
            assert listed == json.loads(reference.dumps(expected)), (store, channel)
            stores_with_pages += bool(listed)
    assert stores_with_pages == 10  # 7 stores on channel 0, 3 of them also on channel 1


def test_dry_run_validates_and_counts_without_writing(sample_build: Path, tmp_path: Path) -> None:
    import subprocess
    import sys

    output = tmp_path / "never"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pipeline",
            "build",
            "--dry-run",
            "--input",
            str(SAMPLE),
            "--output",
            str(output),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    summary = json.loads(result.stdout)
    report = orjson.loads((sample_build / "build_report.json").read_bytes())
    assert summary["inventory_pages"] == report["site"]["pages"]
    assert summary["stores"] == report["stores"]
    assert not output.exists()
