"""Contract checks: every bad row lands in meta.rejects with file, row, column, value, reason;
the good rows go on."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime
from decimal import Decimal
from pathlib import Path

import duckdb
import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.build import build
from pipeline.settings import load_settings
from tests.support.inputs import write_inputs
from tests.support.runs import good_build, rows, run_cli, run_pipeline

Pipeline = Callable[..., duckdb.DuckDBPyConnection]
L = "stores/listings.csv"


def _listing(**kw: object) -> dict[str, object]:
    return {
        "storeKey": "s1",
        "channelId": 0,
        "skuId": 1000,
        "price": "1.00",
        "quantity": 1,
        "isCustom": False,
        "storePriceCustomId": None,
        **kw,
    }


def test_row_level_rejects_name_file_row_column_value_and_reason(pipeline_for: Pipeline) -> None:
    con = pipeline_for(
        listings=[
            _listing(),  # 1 good
            _listing(storeKey=None, skuId=1001),  # 2 missing key
            _listing(price="1.234", skuId=1010),  # 3 three decimals
            _listing(price="-1", skuId=1001, storeKey="s2"),  # 4 negative price
            _listing(quantity="two", storeKey="s3"),  # 5 wrong type
            _listing(storeKey="bad key!", skuId=1001),  # 6 store key pattern
            _listing(isCustom="yes", storeKey="s4"),  # 7 boolean
            _listing(isCustom=True, storeKey="s5"),  # 8 custom without storePriceCustomId
            _listing(skuId=999, storeKey="s6"),  # 9 unknown sku
            _listing(storeKey="S7", price="2.50"),  # 10 duplicate key (s7, 0, 1000) ...
            _listing(storeKey="s7", price="2.60"),  # 11 ... with this one: both rejected
            _listing(price="1.200", skuId=1001),  # 12 trailing zeros are fine
            _listing(channelId=2147483648, storeKey="s8"),  # 13 out of int32 range
            _listing(
                isCustom=True, storePriceCustomId=1, additionalImageUrls="not json", storeKey="s9"
            ),
            _listing(
                isCustom=True, storePriceCustomId=2, additionalImageUrls='["a", 1]', storeKey="s9"
            ),
            _listing(isCustom=True, storePriceCustomId="3a", storeKey="s10"),  # 16 unreadable
            _listing(storePriceCustomId="3a", storeKey="s11"),  # 17 generic: no need of it
        ]
    )
    assert rows(
        con,
        "SELECT source_file, source_row, column_name, value, reason, check_name "
        "FROM meta.rejects ORDER BY source_row, column_name",
    ) == [
        (L, 2, "storeKey", None, "missing value", "contract"),
        (L, 3, "price", "1.234", "more than two decimal places", "contract"),
        (L, 4, "price", "-1", "negative value", "contract"),
        (L, 5, "quantity", "two", "not a 32-bit integer", "contract"),
        (L, 6, "storeKey", "bad key!", "does not match [A-Za-z0-9_-]{1,64}", "contract"),
        (L, 7, "isCustom", "yes", "not a boolean (true, false, 1, 0)", "contract"),
        (
            L,
            8,
            "storePriceCustomId",
            None,
            "missing value (required when isCustom is true)",
            "contract",
        ),
        (L, 9, "skuId", "999", "unknown skuId", "listings_unknown_sku"),
        (L, 10, "skuId", "s7,0,1000", "duplicate listing key", "listings_duplicate_key"),
        (L, 11, "skuId", "s7,0,1000", "duplicate listing key", "listings_duplicate_key"),
        (L, 13, "channelId", "2147483648", "not a 32-bit integer", "contract"),
        (
            L,
            16,
            "storePriceCustomId",
            "3a",
            "missing value (required when isCustom is true)",
            "contract",
        ),
    ]
    # An optional column's value that cannot be read costs its row nothing: a warning.
    assert rows(
        con,
        "SELECT source_file, source_row, column_name, value, reason, check_name "
        "FROM meta.warnings ORDER BY source_row, column_name",
    ) == [
        (L, 14, "additionalImageUrls", "not json", "not a JSON array of strings", "contract"),
        (L, 15, "additionalImageUrls", '["a", 1]', "not a JSON array of strings", "contract"),
        (L, 17, "storePriceCustomId", "3a", "not a 64-bit integer", "contract"),
    ]
    assert rows(
        con,
        "SELECT source_row, store_key, price, additional_image_urls FROM staging.listings "
        "ORDER BY 1",
    ) == [
        (1, "s1", Decimal("1.00"), None),
        (12, "s1", Decimal("1.20"), None),
        (14, "s9", Decimal("1.00"), None),
        (15, "s9", Decimal("1.00"), None),
        (17, "s11", Decimal("1.00"), None),
    ]


def test_catalog_rejects_cascade_to_children(pipeline_for: Pipeline) -> None:
    con = pipeline_for(
        products=[
            {"productId": 100, "categoryId": 1, "groupId": 10, "name": "Sol Ring"},
            {"productId": 101, "categoryId": 9, "groupId": 10, "name": "Orphan"},
            {"productId": 102, "categoryId": 1, "groupId": 10, "name": "Twin"},
            {"productId": 102, "categoryId": 1, "groupId": 10, "name": "Twin again"},
        ],
        skus=[
            {"skuId": 1000, "productId": 100, "conditionId": 1, "languageId": 1, "printingId": 1},
            {"skuId": 1010, "productId": 101, "conditionId": 1, "languageId": 1, "printingId": 1},
            {"skuId": 1020, "productId": 100, "conditionId": 7, "languageId": 3, "printingId": 5},
        ],
        listings=[_listing(), _listing(skuId=1010), _listing(skuId=1020)],
    )
    assert rows(
        con,
        "SELECT table_name, source_row, column_name, value, reason FROM meta.rejects "
        "ORDER BY table_name, source_row",
    ) == [
        ("listings", 2, "skuId", "1010", "unknown skuId"),
        ("products", 2, "categoryId", "9", "unknown categoryId"),
        ("products", 3, "productId", "102", "duplicate key"),
        ("products", 4, "productId", "102", "duplicate key"),
        ("skus", 2, "productId", "101", "unknown productId"),
    ]
    # The unknown condition, language and printing are kept, as warnings.
    assert rows(
        con,
        "SELECT table_name, source_row, column_name, value FROM meta.warnings ORDER BY column_name",
    ) == [
        ("skus", 3, "conditionId", "7"),
        ("skus", 3, "languageId", "3"),
        ("skus", 3, "printingId", "5"),
    ]
    assert rows(con, "SELECT sku_id FROM marts.listing ORDER BY 1") == [(1000,), (1020,)]


def test_typed_parquet_listings_are_checked_like_text(tmp_path: Path) -> None:
    """The same listings as CSV (text) and as Parquet with typed columns: the same rejects
    (values as their type writes them) and the same staging rows."""
    big = 10**17  # fits DECIMAL(20,2), not the contract's DECIMAL(18,2)
    listings = [
        _listing(),  # 1 good
        _listing(storeKey=None, skuId=1001),  # 2 missing key
        _listing(price=Decimal("-1"), skuId=1001, storeKey="s2"),  # 3 negative price
        _listing(quantity=-2, storeKey="s3"),  # 4 negative quantity
        _listing(storeKey="bad key!", skuId=1001),  # 5 store key pattern
        _listing(isCustom=True, storeKey="s5"),  # 6 custom without storePriceCustomId
        _listing(channelId=2**31, storeKey="s8"),  # 7 out of int32 range
        _listing(price=Decimal(big), storeKey="s9"),  # 8 out of DECIMAL(18,2)
        _listing(isCustom=None, storeKey="s10", price=Decimal("2.5")),  # 9 default false
        _listing(skuId=None, storeKey="s11"),  # 10 missing sku
    ]
    for row in listings:
        row["price"] = Decimal(str(row["price"]))
    text = write_inputs(tmp_path / "text", listings=listings)
    typed = write_inputs(tmp_path / "typed")
    (typed / "stores" / "listings.csv").unlink()
    types = {
        "storeKey": pa.string(),
        "channelId": pa.int64(),
        "skuId": pa.int64(),
        "price": pa.decimal128(20, 2),
        "quantity": pa.int32(),
        "isCustom": pa.bool_(),
        "storePriceCustomId": pa.int64(),
    }
    columns = {k: pa.array([r[k] for r in listings], t) for k, t in types.items()}
    pq.write_table(pa.table(columns), typed / "stores" / "listings.parquet")

    found = {}
    for name, input_dir in (("text", text), ("typed", typed)):
        con = run_pipeline(input_dir)
        found[name] = (
            rows(
                con,
                "SELECT source_row, column_name, reason, value FROM meta.rejects "
                "ORDER BY source_row, column_name",
            ),
            rows(con, "SELECT * EXCLUDE (source_file) FROM staging.listings ORDER BY source_row"),
            dict(
                rows(
                    con,
                    "SELECT column_name, data_type FROM duckdb_columns() "
                    "WHERE schema_name = 'raw' AND table_name = 'listings'",
                )
            ),
        )
        con.close()
    assert (
        [r[:3] for r in found["typed"][0]]
        == [r[:3] for r in found["text"][0]]
        == [
            (2, "storeKey", "missing value"),
            (3, "price", "negative value"),
            (4, "quantity", "negative value"),
            (5, "storeKey", "does not match [A-Za-z0-9_-]{1,64}"),
            (6, "storePriceCustomId", "missing value (required when isCustom is true)"),
            (7, "channelId", "not a 32-bit integer"),
            (8, "price", "out of range"),
            (10, "skuId", "missing value"),
        ]
    )
    assert [r[3] for r in found["typed"][0]][1:3] == ["-1.00", "-2"]
    assert found["typed"][1] == found["text"][1]
    assert [(r[-1], r[0]) for r in found["typed"][1]] == [(1, "s1"), (9, "s10")]
    raw_types = found["typed"][2]
    assert (raw_types["storeKey"], raw_types["channelId"], raw_types["price"]) == (
        "VARCHAR",
        "BIGINT",
        "DECIMAL(20,2)",
    )
    assert found["text"][2]["price"] == "VARCHAR"


def _product(product_id: int, **kw: object) -> dict[str, object]:
    return {"productId": product_id, "categoryId": 1, "groupId": 10, "name": "Card", **kw}


TIMESTAMP_REASON = "not a timestamp without zone (YYYY-MM-DDTHH:MM:SS.fff)"


def test_malformed_presale_info_and_extended_data_are_warnings_by_row_and_column(
    pipeline_for: Pipeline,
) -> None:
    """A presaleInfo that is no object of {isPresale, releasedOn, note}, an extendedData that is
    no list of {name, displayName, value}: a warning naming the row and the column, and the
    value staged absent; a missing key is null. Every row loads."""
    bad = [
        ("presaleInfo", "not json"),  # 3
        ("presaleInfo", "[true]"),  # 4
        ("presaleInfo", '{"isPresale": "yes"}'),  # 5
        ("presaleInfo", '{"releasedOn": "2026-01-01", "note": "soon"}'),  # 6: no isPresale
        ("presaleInfo", '{"isPresale": true, "releasedOn": "next week"}'),  # 7
        ("presaleInfo", '{"isPresale": true, "releasedOn": "2026-01-01T00:00:00+01:00"}'),  # 8
        ("presaleInfo", '{"isPresale": false, "note": {"text": "x"}}'),  # 9
        ("extendedData", '{"name": "Number", "value": "1"}'),  # 10
        ("extendedData", '[{"name": "Number", "value": "1"}, "Rare"]'),  # 11
        ("extendedData", '[{"displayName": "Card Number", "value": "1"}]'),  # 12: no name
        ("extendedData", '[{"name": "Number", "value": [1]}]'),  # 13
        ("extendedData", '[{"name": "Number"'),  # 14
        ("imageCount", "1.5"),  # 15
        ("modifiedOn", "yesterday"),  # 16
        ("imageCount", "3.0"),  # 17: read without loss
    ]
    con = pipeline_for(
        products=[
            _product(100, presaleInfo='{"isPresale": true, "releasedOn": "2026-01-01"}'),
            _product(101, extendedData='[{"name": "Rarity", "displayName": "R", "value": 1}]'),
            *(_product(102 + i, **{column: value}) for i, (column, value) in enumerate(bad)),
        ]
    )
    p = "catalog/products.csv"
    assert rows(con, "SELECT * FROM meta.rejects") == []
    assert rows(
        con,
        "SELECT source_file, source_row, column_name, value, reason FROM meta.warnings "
        "ORDER BY source_row, reason",
    ) == [
        (p, 3, "presaleInfo", "not json", "not a JSON object"),
        (p, 4, "presaleInfo", "[true]", "not a JSON object"),
        (p, 5, "presaleInfo", bad[2][1], "isPresale: not a boolean (true, false, 1, 0)"),
        (p, 7, "presaleInfo", bad[4][1], f"releasedOn: {TIMESTAMP_REASON}"),
        (p, 8, "presaleInfo", bad[5][1], f"releasedOn: {TIMESTAMP_REASON}"),
        (p, 9, "presaleInfo", bad[6][1], "note: an object or array, not a value"),
        (p, 10, "extendedData", bad[7][1], "not a JSON array"),
        (p, 11, "extendedData", bad[8][1], "an entry is not a JSON object"),
        (p, 13, "extendedData", bad[10][1], "an entry's value: an object or array, not a value"),
        (p, 14, "extendedData", bad[11][1], "not a JSON array"),
        (p, 15, "imageCount", "1.5", "not a 32-bit integer"),
        (p, 16, "modifiedOn", "yesterday", TIMESTAMP_REASON),
    ]
    presale = {"is_presale": True, "released_on": datetime(2026, 1, 1), "note": None}
    soon = {"is_presale": None, "released_on": datetime(2026, 1, 1), "note": "soon"}
    nameless = [{"name": None, "display_name": "Card Number", "value": "1"}]
    assert rows(
        con,
        "SELECT product_id, presale_info, extended_data, image_count, modified_on "
        "FROM staging.products WHERE presale_info IS NOT NULL OR extended_data IS NOT NULL "
        "OR image_count IS NOT NULL OR modified_on IS NOT NULL ORDER BY 1",
    ) == [
        (100, presale, None, None, None),
        (101, None, [{"name": "Rarity", "display_name": "R", "value": "1"}], None, None),
        (105, soon, None, None, None),
        (111, None, nameless, None, None),
        (116, None, None, 3, None),
    ]
    assert rows(con, "SELECT count(*) FROM staging.products") == [(17,)]


def test_malformed_nested_values_of_ndjson_and_api_pages_are_warnings(tmp_path: Path) -> None:
    """Nested JSON of the wrong shape is a warning as its text would be, naming the file and
    the row (NDJSON: the line; a catalog API page: the position in `results`), and the row
    loads; a null key (`{"isPresale": null}`) is a value; an object in an optional column of one
    value is its JSON text. The products keep their SKUs, and the SKUs their listings."""
    input_dir = write_inputs(tmp_path, listings=[_listing(), _listing(skuId=1010)])
    (input_dir / "catalog" / "products.csv").unlink()
    folder = input_dir / "catalog" / "products"
    folder.mkdir()
    (folder / "a.ndjson").write_text(
        json.dumps(_product(100, presaleInfo=[True], extendedData=[{"name": "Number"}]))
        + "\n"
        + json.dumps(_product(102, extendedData={"name": "Number", "value": "1"}))
        + "\n"
        + json.dumps(_product(104, imageCount={"front": 1}))
        + "\n",
        encoding="utf-8",
    )
    page = {
        "success": True,
        "errors": [],
        "results": [
            _product(101, presaleInfo={"isPresale": False, "releasedOn": None, "note": None}),
            _product(103, presaleInfo={"isPresale": "no"}, extendedData=[{"name": 5}]),
            _product(105, presaleInfo={"isPresale": None, "releasedOn": None, "note": "n"}),
        ],
    }
    (folder / "b.json").write_text(json.dumps(page), encoding="utf-8")
    con = run_pipeline(input_dir)
    assert rows(con, "SELECT * FROM meta.rejects") == []
    assert rows(con, "SELECT sku_id, product_id FROM marts.listing ORDER BY 1") == [
        (1000, 100),
        (1010, 101),
    ]
    assert rows(
        con,
        "SELECT source_file, source_row, column_name, value, reason FROM meta.warnings "
        "WHERE table_name = 'products' ORDER BY ALL",
    ) == [
        ("catalog/products/a.ndjson", 1, "presaleInfo", "[true]", "not a JSON object"),
        (
            "catalog/products/a.ndjson",
            2,
            "extendedData",
            '{"name":"Number","value":"1"}',
            "not a JSON array",
        ),
        ("catalog/products/a.ndjson", 3, "imageCount", '{"front":1}', "not a 32-bit integer"),
        (
            "catalog/products/b.json",
            2,
            "presaleInfo",
            '{"isPresale":"no"}',
            "isPresale: not a boolean (true, false, 1, 0)",
        ),
    ]
    number = [{"name": "Number", "display_name": None, "value": None}]
    assert rows(
        con, "SELECT product_id, presale_info, extended_data FROM staging.products ORDER BY 1"
    ) == [
        (100, None, number),
        (101, {"is_presale": False, "released_on": None, "note": None}, None),
        (102, None, None),
        (103, None, [{"name": "5", "display_name": None, "value": None}]),
        (104, None, None),
        (105, {"is_presale": None, "released_on": None, "note": "n"}, None),
    ]
    con.close()


GOOD = {"storeKey": "good", "channelId": 0, "price": "1.00", "quantity": 1}


def test_every_bad_row_is_accounted_for_and_every_good_row_published(tmp_path: Path) -> None:
    good = [{**GOOD, "skuId": s} for s in (1000, 1001, 1010)]
    bad = [
        {**GOOD, "skuId": None},  # missing key
        {**GOOD, "skuId": "x"},  # wrong type
        {**GOOD, "skuId": 1000, "storeKey": "other", "price": "-0.01"},  # negative price
        {**GOOD, "skuId": 1000, "storeKey": "other", "quantity": "-1"},  # negative quantity
        {**GOOD, "skuId": 1000, "storeKey": "other", "price": "0.001"},  # three decimals
        {**GOOD, "skuId": 4242},  # unknown sku
        {**GOOD, "skuId": 1000, "storeKey": "dup"},
        {**GOOD, "skuId": 1000, "storeKey": "dup"},
        {**GOOD, "skuId": 1000, "storeKey": "c", "isCustom": "true"},  # no storePriceCustomId
        {**GOOD, "skuId": 1000, "storeKey": "../../etc"},  # invalid store key
        {**GOOD, "skuId": 1000, "storeKey": "x" * 65},
        {**GOOD, "skuId": 1000, "storeKey": "c", "channelId": "zero"},
    ]
    input_dir = write_inputs(
        tmp_path / "in",
        products=[
            {"productId": 100, "categoryId": 1, "groupId": 10, "name": "Sol Ring"},
            {"productId": 101, "categoryId": 1, "groupId": 10, "name": "Black Lotus"},
            {"productId": 102, "categoryId": 7, "groupId": 10, "name": "Unknown category"},
            {"productId": 103, "categoryId": 1, "groupId": 99, "name": "Unknown group"},
        ],
        skus=[
            {"skuId": 1000, "productId": 100, "conditionId": 1, "languageId": 1, "printingId": 1},
            {"skuId": 1001, "productId": 100, "conditionId": 2, "languageId": 1, "printingId": 2},
            {"skuId": 1010, "productId": 101, "conditionId": 1, "languageId": 1, "printingId": 1},
            {"skuId": 1020, "productId": 102, "conditionId": 1, "languageId": 1, "printingId": 1},
        ],
        listings=good + bad + [{**GOOD, "skuId": 1020}],
    )
    output = tmp_path / "out"
    config = tmp_path / "lenient.toml"
    config.write_text("[build]\nmax_reject_share = 1.0\n")
    build(load_settings(config, input=input_dir, output=output))
    con = duckdb.connect(str(output / "warehouse.duckdb"), read_only=True)
    rejected = {
        r[0]
        for r in rows(
            con, "SELECT DISTINCT source_row FROM meta.rejects WHERE table_name = 'listings'"
        )
    }
    assert rejected == set(range(len(good) + 1, len(good) + len(bad) + 2))
    assert rows(
        con,
        "SELECT table_name, source_row, reason FROM meta.rejects WHERE table_name <> 'listings' ORDER BY 1, 2",
    ) == [
        ("products", 3, "unknown categoryId"),
        ("products", 4, "unknown groupId"),
        ("skus", 4, "unknown productId"),
    ]
    assert rows(con, "SELECT sku_id FROM marts.listing ORDER BY 1") == [(1000,), (1001,), (1010,)]
    page = orjson.loads(
        (output / "site/v1.39.0/stores/good/inventory/products/index.json").read_bytes()
    )
    assert sorted(s["skuId"] for p in page["results"] for s in p["skus"]) == [1000, 1001, 1010]
    con.close()


def test_the_reject_threshold_is_configuration(tmp_path: Path) -> None:
    good_output = good_build(tmp_path)  # its own: a build here publishes
    good = {"storeKey": "s1", "skuId": 1000, "price": "1.00", "quantity": 1}
    bad = write_inputs(tmp_path / "bad", listings=[good, {**good, "skuId": 1001, "price": "oops"}])
    config = tmp_path / "pipeline.toml"
    config.write_text("[build]\nmax_reject_share = 0.5\n")
    assert (
        run_cli(
            "build", "--input", str(bad), "--output", str(good_output), "--config", str(config)
        ).returncode
        == 0
    )
    env = {"PIPELINE_BUILD__MAX_REJECT_SHARE": "0.4"}
    assert (
        run_cli("build", "--input", str(bad), "--output", str(good_output), env=env).returncode == 1
    )
