"""The store inventory operation (docs/contract.md §4) on tiny inputs: exact statuses and bytes."""

from __future__ import annotations

import json
from typing import Any

import duckdb
import pytest

from pipeline.serve.routes import answer
from tests.support.inputs import write_inputs
from tests.support.inventory import CATALOG, LISTINGS
from tests.support.runs import run_pipeline


@pytest.fixture(scope="module")
def con(tmp_path_factory: pytest.TempPathFactory) -> duckdb.DuckDBPyConnection:
    return run_pipeline(
        write_inputs(
            tmp_path_factory.mktemp("inventory"),
            **CATALOG,
            stores=[{"storeKey": "Quiet", "name": "Nothing for sale"}],
            excluded_categories=[{"storeKey": "shop", "channelId": 1, "categoryId": 3}],
            listings=LISTINGS,
        )
    )


def get(con: duckdb.DuckDBPyConnection, target: str) -> tuple[int, Any]:
    response = answer(con, target)
    assert response.content_type.startswith("application/json")
    return response.status, json.loads(response.body)


def ids(body: Any) -> list[int]:
    return [p["productId"] for p in body["results"]]


def test_default_page_exact_bytes(con: duckdb.DuckDBPyConnection) -> None:
    body = answer(con, "/v1.39.0/stores/SHOP/inventory/products?limit=1&offset=1").body
    assert body == (
        b'{"totalItems":4,"success":true,"errors":[],"results":[{"productId":101,"name":"black Lotus",'
        b'"category":"Magic","group":"Alpha","rarity":"R","number":null,"skuCount":1,"lowestPrice":5.0,'
        b'"skus":[{"skuId":1010,"condition":{"conditionId":1,"name":"Near Mint"},"language":{"languageId":1,'
        b'"name":"English","abbr":"EN"},"foil":false,"price":5.0,"quantity":1,"isFeatured":null,'
        b'"isCustom":false}]}]}'
    )


def test_skus_order_ties_and_custom_entries(con: duckdb.DuckDBPyConnection) -> None:
    status, body = get(con, "/v1.39.0/stores/shop/inventory/products?productName=RING&skuLimit=10")
    assert status == 200
    (product,) = body["results"]
    assert (product["skuCount"], product["lowestPrice"]) == (5, 0.25)
    entries = [(s["skuId"], s["price"], s.get("storePriceCustomId")) for s in product["skus"]]
    assert entries == [
        (1000, 5.0, None),
        (1000, 5.0, 7),
        (1000, 5.0, 8),
        (1001, 5.0, None),
        (1002, 0.25, None),
    ]
    custom = product["skus"][2]
    assert list(custom) == [
        "skuId",
        "storePriceCustomId",
        "condition",
        "language",
        "foil",
        "price",
        "quantity",
        "isFeatured",
        "isCustom",
        "title",
        "description",
        "mainImageUrl",
        "additionalImageUrls",
    ]
    assert (custom["title"], custom["description"], custom["additionalImageUrls"]) == (
        "Signed",
        None,
        ["a.jpg"],
    )
    assert product["skus"][1]["additionalImageUrls"] == []
    assert "storePriceCustomId" not in product["skus"][0]


def test_sku_limit_zero_and_lowest_price_from_all_entries(con: duckdb.DuckDBPyConnection) -> None:
    _, body = get(con, "/v1.39.0/stores/shop/inventory/products?skuLimit=0&categoryId=1")
    assert [
        (p["productId"], p["skuCount"], p["lowestPrice"], p["skus"]) for p in body["results"]
    ] == [
        (101, 1, 5.0, []),
        (100, 5, 0.25, []),
        (102, 1, 0.25, []),
    ]


@pytest.mark.parametrize(
    ("sort", "expected"),
    [
        (None, [300, 101, 100, 102]),  # price desc, ties on productId ascending
        ("price", [100, 102, 101, 300]),
        ("minprice%20DESC", [300, 101, 100, 102]),
        ("+name+", [102, 101, 300, 100]),  # case-insensitive: black < flabébé < sol
        ("productname  desc", [100, 300, 101, 102]),
    ],
)
def test_sort(con: duckdb.DuckDBPyConnection, sort: str | None, expected: list[int]) -> None:
    query = "" if sort is None else f"?sort={sort}"
    _, body = get(con, f"/v1.39.0/stores/shop/inventory/products{query}")
    assert ids(body) == expected


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("categoryName=MAGIC", [101, 100, 102]),
        ("categoryname=pokémon&CATEGORYID=3", [300]),
        ("categoryId=1&categoryName=Pokémon", []),
        ("groupName=alpha&groupId=10", [101, 100, 102]),
        ("productName=OTU", [101]),
        ("productName=flabebe", []),  # no accent folding
        ("includeGeneric=false", [100]),
        ("includeCustom=False&includeGeneric=False", []),
        ("channelId=1", []),  # category 3 is excluded on channel 1
        ("channelId=1&includeExcludedCategories=true", [300]),
        ("categoryId=-5", []),
        ("offset=3&limit=1", [102]),
        ("offset=4", []),
    ],
)
def test_filters_and_paging(
    con: duckdb.DuckDBPyConnection, query: str, expected: list[int]
) -> None:
    status, body = get(con, f"/v1.39.0/stores/shop/inventory/products?{query}")
    if expected:
        assert (status, ids(body)) == (200, expected)
    else:
        assert (status, body) == (
            404,
            {"success": False, "errors": ["No products were found."], "results": []},
        )


def test_total_items_counts_all_pages(con: duckdb.DuckDBPyConnection) -> None:
    _, body = get(con, "/v1.39.0/stores/shop/inventory/products?limit=2&offset=2")
    assert (body["totalItems"], ids(body)) == (4, [100, 102])


@pytest.mark.parametrize(
    ("target", "status", "errors"),
    [
        ("/v1.39.0/stores/nobody/inventory/products", 404, ["No stores were found."]),
        ("/v1.39.0/stores/quiet/inventory/products", 404, ["No products were found."]),
        ("/v1.39.0/stores/zero/inventory/products", 404, ["No products were found."]),
        (
            "/v1.39.0/stores/nobody/inventory/products?offset=-1",
            400,
            ["offset must be greater than or equal to 0."],
        ),
        (
            "/v1.39.0/stores/shop/inventory/products?offset=abc&limit=101&skuLimit=-1&includeCustom=maybe&sort=cost",
            400,
            [
                "The value 'cost' is not valid for sort. Use price, minprice, name or productname, "
                "optionally followed by asc or desc.",
                "The value 'maybe' is not valid for includeCustom.",
                "The value 'abc' is not valid for offset.",
                "limit must be between 1 and 100.",
                "skuLimit must be greater than or equal to 0.",
            ],
        ),
        (
            "/v1.39.0/stores/shop/inventory/products?limit=",
            400,
            ["The value '' is not valid for limit."],
        ),
        (
            "/v1.39.0/stores/shop/inventory/products?limit=0&limit=5",
            400,
            ["limit must be between 1 and 100."],
        ),
        ("/stores/shop/inventory/products", 404, ["URL not found."]),
        ("/current/stores/shop/inventory/products", 404, ["URL not found."]),
        ("/v1.38.0/stores/shop/inventory/products", 404, ["URL not found."]),
        (
            "/v1.39.0/stores/shop/inventory/products?offset=" + "9" * 5000,
            400,
            ["The value '" + "9" * 5000 + "' is not valid for offset."],
        ),
        (
            "/v1.39.0/stores/shop/inventory/products?sort=name%09desc",
            400,
            [
                "The value 'name\tdesc' is not valid for sort. Use price, minprice, name or productname, "
                "optionally followed by asc or desc."
            ],
        ),
        ("/v1.39.0/stores/shop/../../../etc/passwd", 404, ["URL not found."]),
        ("/v1.39.0/stores/%2e%2e/inventory/products", 404, ["URL not found."]),
        ("/../v1.39.0/stores/shop/inventory/products", 400, ["The request is malformed."]),
        (
            "/v1.39.0/stores/shop/inventory/products?productName=" + "a" * 300,
            404,
            ["No products were found."],
        ),
    ],
)
def test_errors(
    con: duckdb.DuckDBPyConnection, target: str, status: int, errors: list[str]
) -> None:
    assert get(con, target) == (status, {"success": False, "errors": errors, "results": []})


def test_trailing_slash_and_unknown_parameters(con: duckdb.DuckDBPyConnection) -> None:
    plain = answer(con, "/v1.39.0/stores/shop/inventory/products")
    assert answer(con, "/v1.39.0/stores/shop/inventory/products/?foo=bar&limit=10") == plain
    # Paths are normalised as nginx does: repeated slashes, `.` and `..` segments.
    assert answer(con, "//v1.39.0/stores/x/../shop/./inventory//products") == plain


def test_category_listing(con: duckdb.DuckDBPyConnection) -> None:
    status, body = get(con, "/v1.39.0/catalog/categories?offset=1")
    assert (status, body["totalItems"], [c["categoryId"] for c in body["results"]]) == (200, 2, [3])
    assert get(con, "/v1.39.0/catalog/categories?offset=2")[1]["errors"] == [
        "No categories were found."
    ]
