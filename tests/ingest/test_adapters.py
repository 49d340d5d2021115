"""Real-world export formats at ingest: the Seller Portal CSV and catalog API page dumps."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from pipeline.contract import TABLES_BY_NAME
from pipeline.errors import InputError
from pipeline.ingest.adapters import SELLER_PORTAL_COLUMNS, SELLER_PORTAL_REQUIRED, read_api_dump
from pipeline.ingest.files import InputFile
from pipeline.ingest.raw import PARSE_ERROR, json_text
from pipeline.ingest.text import read_ndjson
from tests.support.inputs import BASE_TABLES, write_inputs
from tests.support.runs import rows, run_pipeline

HEADER_18 = SELLER_PORTAL_COLUMNS  # the export's own header, 18 columns
HEADER_16 = HEADER_18[:16]  # the export without the "My Store" columns


def seller_portal(path: Path, header: list[str], rows_: list[dict[str, str]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, header, restval="")
        writer.writeheader()
        writer.writerows(rows_)


def test_seller_portal_exports_become_listings(tmp_path: Path) -> None:
    input_dir = write_inputs(tmp_path / "in")
    (input_dir / "stores" / "listings.csv").unlink()
    folder = input_dir / "stores" / "listings"
    # 16 columns, in another order than the export's: the header is the contract.
    seller_portal(
        folder / "Shop-A.csv",
        list(reversed(HEADER_16)),
        [
            {"TCGplayer Id": "1000", "Total Quantity": "2", "TCG Marketplace Price": "1.50"},
            {
                "TCGplayer Id": "1001",
                "Total Quantity": "0",
                "TCG Marketplace Price": "9.99",
            },  # placeholder
            {"TCGplayer Id": "1010", "Total Quantity": "1", "TCG Marketplace Price": "$3.00"},
            {
                "TCGplayer Id": "1010",
                "Total Quantity": "5",
                "TCG Marketplace Price": "2.00",
            },  # duplicate id
        ],
    )
    seller_portal(
        folder / "shop-b.csv",
        HEADER_18,
        [
            {
                "TCGplayer Id": "1000",
                "Total Quantity": "1",
                "TCG Marketplace Price": "4.00",
                "My Store Reserve Quantity": "2",
                "My Store Price": "3.50",
            },
            {
                "TCGplayer Id": "1001",
                "Total Quantity": "0",
                "TCG Marketplace Price": "4.00",
                "My Store Reserve Quantity": "0",
                "My Store Price": "",
            },
            {
                "TCGplayer Id": "1010",
                "Total Quantity": "0",
                "TCG Marketplace Price": "4.00",
                "My Store Reserve Quantity": "1",
                "My Store Price": "7.25",
            },
        ],
    )
    con = run_pipeline(input_dir)
    assert rows(
        con,
        "SELECT source_file, source_row, store_key, channel_id, sku_id, price::VARCHAR, quantity "
        "FROM staging.listings ORDER BY ALL",
    ) == [
        ("stores/listings/Shop-A.csv", 1, "shop-a", 0, 1000, "1.50", 2),
        ("stores/listings/shop-b.csv", 1, "shop-b", 0, 1000, "4.00", 1),
        ("stores/listings/shop-b.csv#My Store", 1, "shop-b", 1, 1000, "3.50", 2),
        ("stores/listings/shop-b.csv#My Store", 3, "shop-b", 1, 1010, "7.25", 1),
    ]
    assert rows(con, "SELECT source_file, source_row, reason FROM meta.rejects ORDER BY ALL") == [
        ("stores/listings/Shop-A.csv", 3, "duplicate listing key"),
        ("stores/listings/Shop-A.csv", 4, "duplicate listing key"),
    ]
    con.close()


def test_a_seller_portal_export_without_its_columns_is_named(tmp_path: Path) -> None:
    input_dir = write_inputs(tmp_path / "in")
    (input_dir / "stores" / "listings.csv").unlink()
    seller_portal(
        input_dir / "stores" / "listings" / "s.csv",
        ["TCGplayer Id", "Total Quantity"],
        [{"TCGplayer Id": "1", "Total Quantity": "1"}],
    )
    with pytest.raises(
        InputError, match=r"s.csv: missing Seller Portal column TCG Marketplace Price"
    ):
        run_pipeline(input_dir)
    assert "TCG Marketplace Price" in SELLER_PORTAL_REQUIRED


def _page(results: list[dict[str, object]], success: bool = True) -> str:
    return json.dumps(
        {"totalItems": len(results), "success": success, "errors": [], "results": results}
    )


def test_catalog_api_page_dumps_become_catalog_rows(tmp_path: Path) -> None:
    input_dir = write_inputs(tmp_path / "in")
    catalog = input_dir / "catalog"
    for name in ("categories", "groups", "products"):
        (catalog / f"{name}.csv").unlink()
        (catalog / name).mkdir()
    (catalog / "categories" / "page-1.json").write_text(
        _page(
            [
                {
                    "categoryId": 1,
                    "name": "Magic",
                    "modifiedOn": "2025-11-19T15:58:35.27",
                    "displayName": "Magic: TG",
                    "isScannable": True,
                    "popularity": 576635,
                    "isDirect": True,
                },
            ]
        )
    )
    (catalog / "groups" / "page-1.json").write_text(
        _page(
            [
                {
                    "groupId": 10,
                    "name": "Alpha",
                    "abbreviation": "LEA",
                    "isSupplemental": False,
                    "categoryId": 1,
                },
            ]
        )
    )
    products = [
        {
            "productId": 100,
            "name": "Sol Ring",
            "categoryId": 1,
            "groupId": 10,
            "presaleInfo": {"isPresale": False},
            "extendedData": [
                {"name": "Number", "displayName": "Card Number", "value": "270"},
                {"name": "Rarity", "displayName": "Rarity", "value": "Uncommon"},
            ],
        },
        {
            "productId": 101,
            "name": "Alpha Booster Box",
            "categoryId": 1,
            "groupId": 10,
            "extendedData": [],
        },
    ]
    (catalog / "products" / "page-1.json").write_text(_page(products[:1]))
    (catalog / "products" / "page-2.json").write_text(_page(products[1:]))
    con = run_pipeline(input_dir)
    assert rows(
        con,
        "SELECT product_id, category_id, group_id, name, rarity, number, presale_info, "
        "extended_data FROM staging.products ORDER BY 1",
    ) == [
        (
            100,
            1,
            10,
            "Sol Ring",
            "Uncommon",
            "270",
            {"is_presale": False, "released_on": None, "note": None},
            [
                {"name": "Number", "display_name": "Card Number", "value": "270"},
                {"name": "Rarity", "display_name": "Rarity", "value": "Uncommon"},
            ],
        ),
        (101, 1, 10, "Alpha Booster Box", None, None, None, []),
    ]
    assert rows(
        con,
        "SELECT category_id, name, display_name, is_scannable, popularity FROM staging.categories",
    ) == [
        (1, "Magic", "Magic: TG", True, 576635),
    ]
    assert rows(con, "SELECT source_file, source_row FROM staging.products ORDER BY 1") == [
        ("catalog/products/page-1.json", 1),
        ("catalog/products/page-2.json", 1),
    ]
    # Every key of the result is declared (isDirect: live-only, docs/contract.md §6): no extra ones.
    assert rows(con, 'SELECT "isDirect", _extra_columns FROM raw.categories') == [("true", None)]
    con.close()


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            '{"success": false, "errors": ["No products were found."], "results": []}',
            "the page reports failure",
        ),
        ('[{"productId": 1}]', 'not a catalog API page \\(no "results" list\\)'),
        ("{not json", "not a catalog API page"),
    ],
)
def test_a_broken_api_page_is_named(tmp_path: Path, body: str, message: str) -> None:
    input_dir = write_inputs(tmp_path / "in")
    (input_dir / "catalog" / "products").mkdir()
    (input_dir / "catalog" / "products" / "bad.json").write_text(body)
    with pytest.raises(InputError, match=rf"products/bad.json: {message}"):
        run_pipeline(input_dir)
    assert BASE_TABLES["products"]


def test_empty_my_store_cells_are_no_listing(tmp_path: Path) -> None:
    input_dir = write_inputs(tmp_path / "in")
    (input_dir / "stores" / "listings.csv").unlink()
    seller_portal(
        input_dir / "stores" / "listings" / "s.csv",
        HEADER_18,
        [
            {"TCGplayer Id": "1000", "Total Quantity": "1", "TCG Marketplace Price": "1.00"},
            {"TCGplayer Id": "1001", "Total Quantity": "", "TCG Marketplace Price": "1.00"},
        ],
    )
    con = run_pipeline(input_dir)
    assert rows(con, "SELECT channel_id, sku_id FROM staging.listings") == [(0, 1000)]
    assert rows(con, "SELECT source_file, source_row, column_name, reason FROM meta.rejects") == [
        ("stores/listings/s.csv", 2, "quantity", "missing value"),
    ]
    con.close()


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (None, None),
        ("1.0", "1.0"),
        (True, "true"),
        (7, "7"),
        (1.0, "1.0"),
        (1e20, "1e+20"),
        (1e-5, "0.00001"),  # not 1e-05, as Python's repr would write it
        (0.1 + 0.2, "0.30000000000000004"),
        (float("nan"), "null"),  # never read from a file: JSON has no NaN (see below)
        ([1, "a"], '[1,"a"]'),
    ],
)
def test_a_json_value_is_read_as_one_text(value: object, text: str | None) -> None:
    assert json_text(value) == text


def test_ndjson_and_api_dumps_read_values_alike(tmp_path: Path) -> None:
    values = {"categoryId": 1.0, "name": 1e20, "popularity": 1e-5, "isDirect": False}
    ndjson = tmp_path / "categories.ndjson"
    ndjson.write_bytes(json.dumps(values).encode() + b'\n{"categoryId": NaN}\n')
    dump = tmp_path / "categories.json"
    dump.write_text(_page([values]))
    [lines] = read_ndjson(InputFile(ndjson, "ndjson"), frozenset(), 100)  # one batch
    page = read_api_dump(dump, TABLES_BY_NAME["categories"], 100)
    expected = {"categoryId": "1.0", "name": "1e+20", "popularity": "0.00001"}
    for frame in (lines, page):
        assert frame.row(0, named=True) | expected == frame.row(0, named=True)
        assert frame["isDirect"][0] == "false"
    assert lines[PARSE_ERROR][1].startswith("not valid JSON")  # NaN is no JSON value


def test_an_unparseable_seller_portal_quantity_is_rejected_not_dropped(tmp_path: Path) -> None:
    input_dir = write_inputs(tmp_path / "a")
    (input_dir / "stores" / "listings.csv").unlink()
    folder = input_dir / "stores" / "listings"
    folder.mkdir()
    (folder / "shop.csv").write_text(
        "TCGplayer Id,Total Quantity,TCG Marketplace Price\n1000,1,1.00\n1001,1.5,2.00\n1010,0,3.00\n",
        encoding="utf-8",
    )
    con = run_pipeline(input_dir)
    assert rows(con, "SELECT source_row, column_name, value FROM meta.rejects") == [
        (2, "quantity", "1.5")
    ]
    con.close()
