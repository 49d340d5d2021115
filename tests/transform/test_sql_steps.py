"""Each SQL model on tiny inputs, exact expected rows, on a real in-memory DuckDB."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from decimal import Decimal

import duckdb

from tests.support.runs import rows

Pipeline = Callable[..., duckdb.DuckDBPyConnection]


def test_staging_types_defaults_and_lower_case_store_keys(pipeline_for: Pipeline) -> None:
    con = pipeline_for(
        listings=[
            {
                "storeKey": "MiXeD",
                "channelId": "",
                "skuId": " 1000 ",
                "price": "2.5",
                "quantity": "3",
                "isFeatured": "1",
                "isCustom": "",
                "additionalImageUrls": None,
            },
            {
                "storeKey": "other",
                "channelId": "1",
                "skuId": "1000",
                "price": "0",
                "quantity": "0",
                "isFeatured": "",
                "isCustom": "TRUE",
                "storePriceCustomId": "77",
                "title": 'Signed "Alpha"',
                "additionalImageUrls": '["a.jpg","b.jpg"]',
            },
        ],
    )
    assert rows(
        con, "SELECT * EXCLUDE (source_file, source_row) FROM staging.listings ORDER BY store_key"
    ) == [
        ("mixed", 0, 1000, Decimal("2.50"), 3, True, False, None, None, None, None, None),
        (
            "other",
            1,
            1000,
            Decimal("0.00"),
            0,
            None,
            True,
            77,
            'Signed "Alpha"',
            None,
            None,
            ["a.jpg", "b.jpg"],
        ),
    ]


def test_staging_categories_parse_timestamps_and_booleans(pipeline_for: Pipeline) -> None:
    con = pipeline_for(
        categories=[
            {
                "categoryId": 1,
                "name": "Magic",
                "modifiedOn": "2018-11-26T14:06:30.1",
                "isScannable": "True",
                "popularity": "7",
            },
        ]
    )
    assert rows(
        con,
        "SELECT category_id, name, modified_on, is_scannable, popularity FROM staging.categories",
    ) == [
        (1, "Magic", datetime(2018, 11, 26, 14, 6, 30, 100000), True, 7),
    ]


def test_marts_sku_keeps_unknown_vocabulary_with_nulls(pipeline_for: Pipeline) -> None:
    con = pipeline_for(
        skus=[
            {"skuId": 1000, "productId": 100, "conditionId": 1, "languageId": 1, "printingId": 2},
            {"skuId": 1001, "productId": 100, "conditionId": 9, "languageId": 8, "printingId": 7},
        ]
    )
    assert rows(con, "SELECT * FROM marts.sku ORDER BY sku_id") == [
        (
            1000,
            100,
            "Sol Ring",
            1,
            "Magic",
            10,
            "Alpha",
            "Uncommon",
            "270",
            1,
            "Near Mint",
            1,
            "English",
            "EN",
            2,
            "Foil",
            True,
        ),
        (
            1001,
            100,
            "Sol Ring",
            1,
            "Magic",
            10,
            "Alpha",
            "Uncommon",
            "270",
            9,
            None,
            8,
            None,
            None,
            7,
            None,
            False,
        ),
    ]


def test_marts_store_unions_the_stores_file_and_listings(pipeline_for: Pipeline) -> None:
    con = pipeline_for(
        stores=[{"storeKey": "Empty", "name": "Empty shop"}, {"storeKey": "s1", "name": None}],
        listings=[
            {"storeKey": "s1", "skuId": 1000, "price": "1", "quantity": 1},
            {"storeKey": "S2", "channelId": 1, "skuId": 1000, "price": "1", "quantity": 0},
        ],
    )
    assert rows(con, "SELECT * FROM marts.store ORDER BY store_key") == [
        ("empty", "Empty shop", True, 0, 0),
        ("s1", None, True, 1, 1),
        ("s2", None, False, 1, 1),
    ]


def test_marts_listing_flags_excluded_categories_per_channel(pipeline_for: Pipeline) -> None:
    con = pipeline_for(
        excluded_categories=[{"storeKey": "S1", "channelId": "", "categoryId": 1}],
        listings=[
            {"storeKey": "s1", "channelId": 0, "skuId": 1000, "price": "1", "quantity": 1},
            {"storeKey": "s1", "channelId": 1, "skuId": 1000, "price": "1", "quantity": 1},
        ],
    )
    assert rows(
        con,
        "SELECT store_key, channel_id, product_id, category_id, is_excluded_category "
        "FROM marts.listing ORDER BY channel_id",
    ) == [
        ("s1", 0, 100, 1, True),
        ("s1", 1, 100, 1, False),
    ]


def test_marts_store_product_counts_listings_for_sale(pipeline_for: Pipeline) -> None:
    con = pipeline_for(
        listings=[
            {"storeKey": "s1", "skuId": 1000, "price": "4.00", "quantity": 2},
            {"storeKey": "s1", "skuId": 1001, "price": "1.25", "quantity": 1},
            {
                "storeKey": "s1",
                "skuId": 1001,
                "price": "9.99",
                "quantity": 1,
                "isCustom": True,
                "storePriceCustomId": 5,
            },
            {"storeKey": "s1", "skuId": 1010, "price": "100", "quantity": 0},
        ]
    )
    assert rows(con, "SELECT * FROM marts.store_product") == [
        ("s1", 0, 100, 1, 10, False, 3, 1, Decimal("1.25"), Decimal("9.99"), 4),
    ]


def test_export_fragments_escape_text_and_write_nulls(pipeline_for: Pipeline) -> None:
    con = pipeline_for(
        categories=[
            {
                "categoryId": 1,
                "name": "Pokémon",
                "modifiedOn": "2018-11-26 14:06:30",
                "isScannable": None,
            }
        ],
        products=[
            {
                "productId": 100,
                "categoryId": 1,
                "groupId": 10,
                "name": 'Farfetch\'d "\\/"\n',
                "rarity": None,
                "number": None,
            }
        ],
        skus=[
            {"skuId": 1000, "productId": 100, "conditionId": 3, "languageId": 1, "printingId": 1}
        ],
        languages=[{"languageId": 1, "name": "日本語", "abbr": None}],
    )
    assert rows(con, "SELECT head_json FROM export.product") == [
        (
            '{"productId":100,"name":"Farfetch\'d \\"\\\\/\\"\\n","category":"Pokémon","group":"Alpha",'
            '"rarity":null,"number":null',
        )
    ]
    assert rows(con, "SELECT body_json FROM export.sku") == [
        (
            '"condition":{"conditionId":3,"name":null},"language":{"languageId":1,"name":"日本語",'
            '"abbr":null},"foil":false',
        )
    ]
    assert rows(con, "SELECT category_json FROM export.category") == [
        (
            '{"categoryId":1,"name":"Pokémon","modifiedOn":"2018-11-26T14:06:30","displayName":null,'
            '"seoCategoryName":null,"sealedLabel":null,"nonSealedLabel":null,"conditionGuideUrl":null,'
            '"isScannable":null,"popularity":null}',
        )
    ]
