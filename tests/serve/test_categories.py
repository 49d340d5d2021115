"""The category listing (DESIGN §3, "The category listing"): its order, sortOrder and sortDesc,
and the live service's keys, which a column of the categories input brings."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import pytest

from pipeline.serve.routes import answer
from tests.conftest import run_pipeline, write_inputs

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
    """The category object of the live service, as a catalog API dump carries it."""
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
    published = dict(category, modifiedOn="2025-11-19T15:58:35.270")
    assert (
        answer(con, "/v1.39.0/catalog/categories").body
        == json.dumps(
            {"totalItems": 1, "success": True, "errors": [], "results": [published]},
            ensure_ascii=False,
            separators=(",", ":"),
        ).encode()
    )
    con.close()
