"""The catalog's optional columns (docs/contract.md §2): a product's cleanName, imageUrl, url,
modifiedOn, imageCount, presaleInfo (an object) and extendedData (a list of objects), a
printing's displayOrder and modifiedOn, read alike from every format into staging."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.support.inputs import SAMPLE, write_inputs, write_table
from tests.support.runs import rows, run_pipeline

PRESALE = {"isPresale": True, "releasedOn": "2026-03-13T00:00:00", "note": "Ships on release"}
# A number and a boolean value are read as their text.
EXTENDED: list[dict[str, Any]] = [
    {"name": "Number", "displayName": "Card Number", "value": "270"},
    {"name": "Rarity", "displayName": "Rarity", "value": "Uncommon"},
    {"name": "HP", "displayName": "HP", "value": 60},
    {"name": "Foil", "displayName": "Foil", "value": True},
    {"name": "Flavor", "displayName": None, "value": "It's a ring."},
]
SOL_RING: dict[str, Any] = {
    "productId": 100,
    "categoryId": 1,
    "groupId": 10,
    "name": "Sol Ring",
    "rarity": "Uncommon",
    "number": "270",
    "cleanName": "Sol Ring",
    "imageUrl": "https://tcgplayer-cdn.tcgplayer.com/product/100_200w.jpg",
    "url": "https://www.tcgplayer.com/product/100/magic-alpha-sol-ring",
    "modifiedOn": "2025-12-04T15:00:29.8",
    "imageCount": 2,
    "presaleInfo": PRESALE,
    "extendedData": EXTENDED,
}
# Every optional column present and null.
BLACK_LOTUS: dict[str, Any] = {
    "productId": 101,
    "categoryId": 1,
    "groupId": 10,
    "name": "Black Lotus",
    **dict.fromkeys(
        (
            "rarity",
            "number",
            "cleanName",
            "imageUrl",
            "url",
            "modifiedOn",
            "imageCount",
            "presaleInfo",
            "extendedData",
        )
    ),
}
STAGED = [
    (
        100,
        1,
        10,
        "Sol Ring",
        "Uncommon",
        "270",
        "Sol Ring",
        "https://tcgplayer-cdn.tcgplayer.com/product/100_200w.jpg",
        "https://www.tcgplayer.com/product/100/magic-alpha-sol-ring",
        datetime(2025, 12, 4, 15, 0, 29, 800000),
        2,
        {"is_presale": True, "released_on": datetime(2026, 3, 13), "note": "Ships on release"},
        [
            {"name": "Number", "display_name": "Card Number", "value": "270"},
            {"name": "Rarity", "display_name": "Rarity", "value": "Uncommon"},
            {"name": "HP", "display_name": "HP", "value": "60"},
            {"name": "Foil", "display_name": "Foil", "value": "true"},
            {"name": "Flavor", "display_name": None, "value": "It's a ring."},
        ],
    ),
    (101, 1, 10, "Black Lotus", *[None] * 9),
]
PRODUCT_COLUMNS = (
    "product_id, category_id, group_id, name, rarity, number, clean_name, image_url, url, "
    "modified_on, image_count, presale_info, extended_data"
)


def _as_text(product: dict[str, Any]) -> dict[str, Any]:
    """The product with its nested columns as JSON text (null stays null)."""
    return {
        k: json.dumps(v) if k in ("presaleInfo", "extendedData") and v is not None else v
        for k, v in product.items()
    }


def _write_parquet(path: Path, products: list[dict[str, Any]], nested: bool) -> None:
    presale = pa.struct(
        [("isPresale", pa.bool_()), ("releasedOn", pa.timestamp("ms")), ("note", pa.string())]
    )
    entry = pa.struct([("name", pa.string()), ("displayName", pa.string()), ("value", pa.string())])
    columns: dict[str, pa.Array] = {
        "productId": pa.array([p["productId"] for p in products], pa.int64()),
        "categoryId": pa.array([p["categoryId"] for p in products], pa.int32()),
        "groupId": pa.array([p["groupId"] for p in products], pa.int64()),
        "imageCount": pa.array([p["imageCount"] for p in products], pa.int32()),
        "modifiedOn": pa.array(
            [p["modifiedOn"] and datetime.fromisoformat(p["modifiedOn"]) for p in products],
            pa.timestamp("ms"),
        ),
    }
    for name in ("name", "rarity", "number", "cleanName", "imageUrl", "url"):
        columns[name] = pa.array([p[name] for p in products], pa.string())
    if nested:  # a struct, and a list of structs whose values are strings (a Parquet column
        # has one type)
        columns["presaleInfo"] = pa.array(
            [
                p["presaleInfo"]
                and {
                    **p["presaleInfo"],
                    "releasedOn": datetime.fromisoformat(p["presaleInfo"]["releasedOn"]),
                }
                for p in products
            ],
            presale,
        )
        columns["extendedData"] = pa.array(
            [
                p["extendedData"]
                and [
                    {
                        **e,
                        "value": json.dumps(e["value"])
                        if not isinstance(e["value"], str)
                        else e["value"],
                    }
                    for e in p["extendedData"]
                ]
                for p in products
            ],
            pa.list_(entry),
        )
    else:
        for name in ("presaleInfo", "extendedData"):
            columns[name] = pa.array([_as_text(p)[name] for p in products], pa.string())
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table(columns), path)


def _write_products(input_dir: Path, fmt: str) -> None:
    """The two products in one format: csv (JSON text), ndjson (nested JSON, or JSON text),
    parquet (struct and list, or JSON text) or a catalog API page dump."""
    (input_dir / "catalog" / "products.csv").unlink()
    products = [SOL_RING, BLACK_LOTUS]
    if fmt == "csv":
        write_table(input_dir, "products", [_as_text(p) for p in products])
    elif fmt == "ndjson":
        write_table(input_dir, "products", products, fmt="ndjson")
    elif fmt == "ndjson-text":
        write_table(input_dir, "products", [_as_text(p) for p in products], fmt="ndjson")
    elif fmt.startswith("parquet"):
        path = input_dir / "catalog" / "products.parquet"
        _write_parquet(path, products, nested=fmt == "parquet")
    else:  # the dump has no rarity and number: its extendedData gives them
        dump = [{k: v for k, v in p.items() if k not in ("rarity", "number")} for p in products]
        page = {"totalItems": 2, "success": True, "errors": [], "results": dump}
        (input_dir / "catalog" / "products.json").write_text(json.dumps(page), encoding="utf-8")


@pytest.mark.parametrize("fmt", ["csv", "ndjson", "ndjson-text", "parquet", "parquet-text", "json"])
def test_every_format_gives_the_same_staged_products(tmp_path: Path, fmt: str) -> None:
    input_dir = write_inputs(tmp_path)
    _write_products(input_dir, fmt)
    con = run_pipeline(input_dir)
    assert rows(con, "SELECT * FROM meta.rejects") == []
    assert rows(con, f"SELECT {PRODUCT_COLUMNS} FROM staging.products ORDER BY 1") == STAGED
    types = rows(
        con,
        "SELECT column_name, data_type FROM duckdb_columns() "
        "WHERE schema_name = 'staging' AND table_name = 'products' ORDER BY column_index",
    )
    assert types[5:13] == [
        ("number", "VARCHAR"),
        ("clean_name", "VARCHAR"),
        ("image_url", "VARCHAR"),
        ("url", "VARCHAR"),
        ("modified_on", "TIMESTAMP"),
        ("image_count", "INTEGER"),
        ("presale_info", "STRUCT(is_presale BOOLEAN, released_on TIMESTAMP, note VARCHAR)"),
        ("extended_data", 'STRUCT("name" VARCHAR, display_name VARCHAR, "value" VARCHAR)[]'),
    ]
    con.close()


def test_absent_columns_and_empty_or_null_values_stage_as_null(tmp_path: Path) -> None:
    """A file without the columns, empty cells, and JSON text `null` are no value; `[]` is an
    empty list, and an object's missing keys are null."""
    input_dir = write_inputs(tmp_path)  # products.csv without the optional columns
    write_table(
        input_dir,
        "products",
        [
            {"productId": 102, "categoryId": 1, "groupId": 10, "name": "Mox", "imageUrl": ""},
            {
                "productId": 103,
                "categoryId": 1,
                "groupId": 10,
                "name": "Null",
                "presaleInfo": "null",
                "extendedData": "null",
            },
            {
                "productId": 104,
                "categoryId": 1,
                "groupId": 10,
                "name": "Partial",
                "presaleInfo": '{"isPresale": false}',
                "extendedData": "[]",
            },
        ],
        fmt="ndjson",
    )
    con = run_pipeline(input_dir)
    assert rows(con, "SELECT * FROM meta.rejects") == []
    assert rows(
        con,
        f"SELECT source_file, {PRODUCT_COLUMNS} FROM staging.products ORDER BY product_id",
    ) == [
        ("catalog/products.csv", 100, 1, 10, "Sol Ring", "Uncommon", "270", *[None] * 7),
        ("catalog/products.csv", 101, 1, 10, "Black Lotus", "Rare", None, *[None] * 7),
        ("catalog/products.ndjson", 102, 1, 10, "Mox", *[None] * 9),
        ("catalog/products.ndjson", 103, 1, 10, "Null", *[None] * 9),
        (
            "catalog/products.ndjson",
            104,
            1,
            10,
            "Partial",
            *[None] * 7,
            {"is_presale": False, "released_on": None, "note": None},
            [],
        ),
    ]
    assert rows(con, "SELECT printing_id, display_order, modified_on FROM staging.printings") == [
        (1, None, None),
        (2, None, None),
    ]
    con.close()


def test_nested_values_of_undeclared_columns_are_kept_in_raw_not_rejected(tmp_path: Path) -> None:
    """Unknown columns are kept in raw and otherwise ignored, whatever they hold: an NDJSON
    object or array in one is its JSON text in `_extra_columns` (it was once a reject of the
    whole row), and so in a catalog API page."""
    input_dir = write_inputs(tmp_path)
    (input_dir / "catalog" / "products.csv").unlink()
    write_table(
        input_dir,
        "products",
        [
            {"productId": 102, "categoryId": 1, "groupId": 10, "name": "Mox", "note": "x"},
            {
                "productId": 100,
                "categoryId": 1,
                "groupId": 10,
                "name": "Sol Ring",
                "skus": [{"skuId": 1000, "conditionId": 1}],
                "productTypeName": "Cards",
            },
            {
                "productId": 101,
                "categoryId": 1,
                "groupId": 10,
                "name": "Black Lotus",
                "marketInfo": {"low": 1.5, "tags": []},
            },
        ],
        fmt="ndjson",
    )
    (input_dir / "catalog" / "groups.csv").unlink()
    page = {
        "success": True,
        "errors": [],
        "results": [{"groupId": 10, "categoryId": 1, "name": "Alpha", "links": {"self": "/g/10"}}],
    }
    (input_dir / "catalog" / "groups.json").write_text(json.dumps(page), encoding="utf-8")
    con = run_pipeline(input_dir)
    assert rows(con, "SELECT * FROM meta.rejects") == []
    assert rows(con, "SELECT product_id, name FROM staging.products ORDER BY 1") == [
        (100, "Sol Ring"),
        (101, "Black Lotus"),
        (102, "Mox"),
    ]
    assert rows(
        con,
        "SELECT _parse_error, _extra_columns ->> 'skus', _extra_columns ->> 'productTypeName', "
        "_extra_columns ->> 'marketInfo' FROM raw.products ORDER BY _source_row",
    ) == [
        (None, None, None, None),
        (None, '[{"skuId":1000,"conditionId":1}]', "Cards", None),
        (None, None, None, '{"low":1.5,"tags":[]}'),
    ]
    assert rows(con, "SELECT _extra_columns ->> 'links' FROM raw.groups") == [('{"self":"/g/10"}',)]
    con.close()


def test_printings_display_order_and_modified_on(tmp_path: Path) -> None:
    input_dir = write_inputs(
        tmp_path,
        printings=[
            {"printingId": 1, "name": "Normal", "displayOrder": 1, "modifiedOn": "2024-01-17"},
            {
                "printingId": 2,
                "name": "Foil",
                "foil": True,
                "displayOrder": 2,
                "modifiedOn": "2024-01-17T14:23:40.603",
            },
            {"printingId": 3, "name": "Holofoil", "displayOrder": "first", "modifiedOn": "soon"},
        ],
    )
    con = run_pipeline(input_dir)
    assert rows(
        con,
        "SELECT printing_id, name, foil, display_order, modified_on FROM staging.printings "
        "ORDER BY 1",
    ) == [
        (1, "Normal", False, 1, datetime(2024, 1, 17)),
        (2, "Foil", True, 2, datetime(2024, 1, 17, 14, 23, 40, 603000)),
        (3, "Holofoil", False, None, None),  # unreadable: absent, foil false
    ]
    assert rows(con, "SELECT count(*) FROM meta.rejects") == [(0,)]
    assert rows(
        con,
        "SELECT source_file, source_row, column_name, value, reason FROM meta.warnings "
        "ORDER BY column_name",
    ) == [
        ("catalog/printings.csv", 3, "displayOrder", "first", "not a 32-bit integer"),
        (
            "catalog/printings.csv",
            3,
            "modifiedOn",
            "soon",
            "not a timestamp without zone (YYYY-MM-DDTHH:MM:SS.fff)",
        ),
    ]
    con.close()


def test_the_sample_gives_every_product_and_printing_its_catalog_fields() -> None:
    """The shipped sample has what the live service has for every product (a client's model
    reads them all), and its extendedData agrees with the rarity and number columns."""
    con = run_pipeline(SAMPLE)
    assert rows(con, "SELECT count(*) FROM meta.rejects") == [(0,)]
    assert rows(
        con,
        "SELECT count(*), count(clean_name), count(image_url), count(url), count(modified_on), "
        "count(image_count), count(presale_info), count(extended_data), "
        "count(*) FILTER (WHERE presale_info.is_presale), "
        "count(*) FILTER (WHERE rarity IS NOT DISTINCT FROM list_filter(extended_data, "
        "lambda e: e.name = 'Rarity')[1].value AND number IS NOT DISTINCT FROM "
        "list_filter(extended_data, lambda e: e.name = 'Number')[1].value) "
        "FROM staging.products",
    ) == [(445, *[445] * 7, 2, 445)]
    assert rows(
        con,
        "SELECT count(*) FROM staging.printings WHERE display_order IS NULL OR modified_on IS NULL",
    ) == [(0,)]
    con.close()
