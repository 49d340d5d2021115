"""The category listing (docs/contract.md §6): its order, sortOrder and sortDesc,
and the live service's keys, which a column of the categories input brings."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import pytest

from pipeline.serve.routes import answer
from tests.support.inputs import write_inputs
from tests.support.runs import run_pipeline

CATEGORIES = [
    {"categoryId": 5, "name": "beta", "popularity": 3, "isScannable": True},
    {"categoryId": 2, "name": "Alpha", "popularity": None, "isScannable": False},
    {"categoryId": 9, "name": "alpha", "popularity": 3},
    {"categoryId": 1, "name": "Écarlate", "popularity": 1, "isScannable": True},
]
GROUPS = [{"groupId": 10, "categoryId": 1, "name": "G"}]


def ids(con: duckdb.DuckDBPyConnection, query: str) -> list[int]:
    response = answer(con, f"/v1.39.0/catalog/categories?{query}")
    assert response.status == 200, response.body
    return [c["categoryId"] for c in json.loads(response.body)["results"]]


@pytest.fixture(scope="module")
def con(tmp_path_factory: pytest.TempPathFactory) -> duckdb.DuckDBPyConnection:
    return run_pipeline(
        write_inputs(tmp_path_factory.mktemp("categories"), categories=CATEGORIES, groups=GROUPS)
    )


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("", [2, 9, 5, 1]),  # by lower-cased name (code points: É after b), ties on categoryId
        ("sortDesc=true", [1, 5, 2, 9]),
        ("sortOrder=CATEGORYID", [1, 2, 5, 9]),
        ("sortorder=categoryId&SORTDESC=TRUE", [9, 5, 2, 1]),
        ("sortOrder=popularity", [2, 1, 5, 9]),  # null first, ties on categoryId
        ("sortOrder=popularity&sortDesc=true", [5, 9, 1, 2]),  # null last, ties ascending
        ("sortOrder=isScannable", [9, 2, 1, 5]),
        ("sortOrder=displayName", [1, 2, 5, 9]),  # every value null: categoryId
        ("sortOrder=isDirect&sortDesc=true", [1, 2, 5, 9]),  # a field the input lacks
        ("sortOrder=&limit=2&offset=1", [9, 5]),  # empty: the default
    ],
)
def test_order(con: duckdb.DuckDBPyConnection, query: str, expected: list[int]) -> None:
    assert ids(con, query) == expected


@pytest.mark.parametrize(
    ("query", "errors"),
    [
        (
            "sortOrder=price",
            [
                "The value 'price' is not valid for sortOrder. Use a field of the category: "
                "categoryId, name, modifiedOn, displayName, seoCategoryName, categoryDescription, "
                "categoryPageTitle, sealedLabel, nonSealedLabel, conditionGuideUrl, isScannable, "
                "popularity, isDirect."
            ],
        ),
        (
            "sortDesc=yes&offset=-1",
            [
                "The value 'yes' is not valid for sortDesc.",
                "offset must be greater than or equal to 0.",
            ],
        ),
    ],
)
def test_bad_parameters(con: duckdb.DuckDBPyConnection, query: str, errors: list[str]) -> None:
    response = answer(con, f"/v1.39.0/catalog/categories?{query}")
    body = {"success": False, "errors": errors, "results": []}
    assert (response.status, json.loads(response.body)) == (400, body)


def _first(con: duckdb.DuckDBPyConnection) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(answer(con, "/v1.39.0/catalog/categories").body)
    return result["results"][0]


def test_live_keys_absent_without_their_column(con: duckdb.DuckDBPyConnection) -> None:
    assert list(_first(con)) == [
        "categoryId",
        "name",
        "modifiedOn",
        "displayName",
        "seoCategoryName",
        "sealedLabel",
        "nonSealedLabel",
        "conditionGuideUrl",
        "isScannable",
        "popularity",
    ]


def test_live_keys_from_a_csv_column(tmp_path: Path) -> None:
    rows = [
        {"categoryId": 1, "name": "A", "isDirect": "true", "categoryPageTitle": "T"},
        {"categoryId": 2, "name": "B"},
    ]
    con = run_pipeline(write_inputs(tmp_path, categories=rows, groups=GROUPS))
    body = json.loads(answer(con, "/v1.39.0/catalog/categories").body)
    assert [list(c)[5:6] + list(c)[-1:] for c in body["results"]] == [
        ["categoryPageTitle", "isDirect"]
    ] * 2
    assert [(c["categoryPageTitle"], c["isDirect"]) for c in body["results"]] == [
        ("T", True),
        (None, None),
    ]
    assert "categoryDescription" not in body["results"][0]
    con.close()


def test_live_keys_from_a_catalog_api_dump(tmp_path: Path) -> None:
    """The category object of the live service, as a catalog API dump carries it, is
    published byte for byte as the live service wrote it (its date too)."""
    category = {
        "categoryId": 3,
        "name": "Pokemon",
        "modifiedOn": "2025-11-19T15:58:35.27",
        "displayName": "Pokemon",
        "seoCategoryName": "Pokemon",
        "categoryDescription": "(marketing text omitted)",
        "categoryPageTitle": "TCGplayer - Buy Pokémon TCG Cards, Singles, and Pack",
        "sealedLabel": "Sealed Products",
        "nonSealedLabel": "Single Cards",
        "conditionGuideUrl": "https://store.tcgplayer.com/help/cardconditionguide",
        "isScannable": True,
        "popularity": 576635,
        "isDirect": True,
    }
    input_dir = write_inputs(tmp_path, groups=[{"groupId": 10, "categoryId": 3, "name": "G"}])
    (input_dir / "catalog" / "categories.csv").unlink()
    (input_dir / "catalog" / "categories.json").write_text(
        json.dumps({"success": True, "errors": [], "results": [category]}), encoding="utf-8"
    )
    con = run_pipeline(input_dir)
    assert (
        answer(con, "/v1.39.0/catalog/categories").body
        == json.dumps(
            {"totalItems": 1, "success": True, "errors": [], "results": [category]},
            ensure_ascii=False,
            separators=(",", ":"),
        ).encode()
    )
    con.close()


# Times as the input writes them -> as the live service writes them: seconds always, the
# fraction without trailing zeros, no dot when it is zero; microseconds kept.
DATES = [
    ("2025-11-19T15:58:35.27", "2025-11-19T15:58:35.27"),
    ("2025-11-19T15:58:35.270", "2025-11-19T15:58:35.27"),
    ("2025-12-04T15:00:29.8", "2025-12-04T15:00:29.8"),
    ("2022-11-11T00:00:00", "2022-11-11T00:00:00"),
    ("2022-11-11T00:00:00.000", "2022-11-11T00:00:00"),
    ("2022-11-11 00:00", "2022-11-11T00:00:00"),
    ("2022-11-11", "2022-11-11T00:00:00"),
    ("2018-11-26T14:06:30.123", "2018-11-26T14:06:30.123"),
    ("2018-11-26T14:06:30.123450", "2018-11-26T14:06:30.12345"),
    ("2018-11-26T14:06:30.000001", "2018-11-26T14:06:30.000001"),
    ("2018-11-26T14:06:30.100", "2018-11-26T14:06:30.1"),
    (None, None),
]


def test_dates_are_written_as_the_live_service_writes_them(tmp_path: Path) -> None:
    """modifiedOn of the category listing, publishedOn and modifiedOn of the store's groups."""
    n = len(DATES)
    categories = [
        {"categoryId": i, "name": f"c{i:02d}", "modifiedOn": given}
        for i, (given, _) in enumerate(DATES, 1)
    ]
    groups = [
        {
            "groupId": 10 + i,
            "categoryId": 1,
            "name": f"g{i:02d}",
            "publishedOn": given,
            "modifiedOn": DATES[n - i][0],
        }
        for i, (given, _) in enumerate(DATES, 1)
    ]
    products = [
        {"productId": 100 + i, "categoryId": 1, "groupId": 10 + i, "name": f"p{i}"}
        for i in range(1, n + 1)
    ]
    skus = [
        {
            "skuId": 1000 + i,
            "productId": 100 + i,
            "conditionId": 1,
            "languageId": 1,
            "printingId": 1,
        }
        for i in range(1, n + 1)
    ]
    listings = [
        {"storeKey": "s1", "skuId": 1000 + i, "price": "1.00", "quantity": 1}
        for i in range(1, n + 1)
    ]
    input_dir = write_inputs(
        tmp_path,
        categories=categories,
        groups=groups,
        products=products,
        skus=skus,
        listings=listings,
    )
    con = run_pipeline(input_dir)
    written = [wanted for _, wanted in DATES]
    body = json.loads(answer(con, "/v1.39.0/catalog/categories?limit=100").body)
    assert [c["modifiedOn"] for c in body["results"]] == written
    assert [c for c in body["results"] if "isDirect" in c] == []  # the input has no column
    body = json.loads(answer(con, "/v1.39.0/stores/s1/inventory/groups?limit=100").body)
    assert [(g["publishedOn"], g["modifiedOn"]) for g in body["results"]] == list(
        zip(written, written[::-1], strict=True)
    )
    con.close()


@pytest.mark.parametrize(("_given", "written"), [d for d in DATES if d[1]])
def test_the_documented_time_pattern_is_the_written_rule(_given: str, written: str) -> None:
    """The OpenAPI pattern (`pipeline.db.TIME_PATTERN`) takes every written time and refuses
    what the live service never writes: trailing zeros, an empty fraction, a zone."""
    import re

    from pipeline.db import TIME_PATTERN

    assert re.fullmatch(TIME_PATTERN, written)
    for never in (written + ("0" if "." in written else ".0"), written + ".", written + "Z"):
        assert not re.fullmatch(TIME_PATTERN, never), never
    assert re.fullmatch(TIME_PATTERN, "2025-11-19T15:58:35.1234567")  # .NET's seven digits
