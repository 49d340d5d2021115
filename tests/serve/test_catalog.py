"""The catalog and marketplace price operations (docs/contract.md) over real sockets and on
tiny inputs: `pipeline serve` against the independent reference model on the sample, nginx
against `pipeline serve`, every materialised page against its live answer, and exact answers
and market figures on inputs small enough to check by hand."""

from __future__ import annotations

import json
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline import db
from pipeline.serve.routes import answer
from tests.support import reference
from tests.support.inputs import BASE_TABLES, write_inputs, write_table
from tests.support.runs import rows, run_pipeline
from tests.support.servers import Client, both, request
from tests.support.targets import materialised_targets, query_string

# --- random requests against the reference model ------------------------------------------

INTS = ["0", "1", "2", "5", "10", "010", "-1", "100", "101", "abc", "", "2147483648", "1.5"]
BOOLS = ["true", "false", "TRUE", "False", "maybe", "", "1"]
PARAMS = {
    "getExtendedFields": BOOLS,
    "includeSkus": BOOLS,
    "offset": [*INTS, "20", "440", "445"],
    "limit": INTS,
    "categoryId": ["1", "3", "62", "9", "-1", "x"],
    "categoryName": ["magic", "POKEMON", "pokémon", "", "flesh & blood tcg"],
    "groupId": ["1001", "1009", "1014", "0", "x", "9223372036854775808"],
    "groupName": ["dominaria united", "BASE SET", "", "nothing"],
    "productName": ["a", "LUGIA", "ring", "é", "", "zzz"],
    "productTypes": ["Cards", "x"],
    "unknownParam": ["x"],
    "isSupplemental": BOOLS,
    "sortOrder": ["name", "GROUPID", "abbreviation", "publishedOn", "modifiedon", "popularity", ""],
    "sortDesc": BOOLS,
    "hasSealed": ["true", "x"],
}
# Path ids: known ones (of categories with excluded stores too), unknown, negative, zero,
# leading zeros (a few and more than 19 digits), out of range, not numbers.
ODD = ["0", "-1", "-0", "x", "1.5", "+1", "1e3", "9223372036854775808"]
CATEGORY_IDS = ["1", "2", "3", "62", "71", "9", "03", "2147483647", "2147483648", *ODD]
GROUP_IDS = ["1001", "1009", "1014", "1017", "1021", "7", "01001", "0" * 20 + "1009", *ODD]
PRODUCT_IDS = ["100001", "100246", "100347", "100405", "300001", "300005", "42", "0100001", *ODD]
SKU_IDS = ["5000001", "5000002", "5009139", "5010143", "5010540", "4", "05000001", *ODD]
POOLS = {
    "categoryId": CATEGORY_IDS,
    "categoryIds": CATEGORY_IDS,
    "groupId": GROUP_IDS,
    "groupIds": GROUP_IDS,
    "productId": PRODUCT_IDS,
    "productIds": PRODUCT_IDS,
    "skuIds": SKU_IDS,
}
# Lists of exactly 250 and 251 ids as given: repeats count, and a leading zero names the same id.
LONG_LISTS = {
    name: [",".join([pool[0], pool[6]] * 125), ",".join([pool[0]] * 251), ",".join([pool[1]] * 250)]
    for name, pool in POOLS.items()
}


@st.composite
def catalog_targets(draw: st.DrawFn) -> tuple[str, str]:
    """A path of one of the operations and a query string."""
    op = draw(st.sampled_from(sorted(reference.CATALOG_OPS.values(), key=lambda o: o.path)))
    path = op.path
    if op.id_name is not None:
        pool = POOLS[op.id_name]
        # Mostly ids that parse (known, unknown, leading zeros), so that most lists get answers.
        parsing = pool[: -len(ODD)]
        ids = st.sampled_from(parsing if draw(st.integers(0, 3)) else pool)
        if op.id_name.endswith("Ids"):
            listed = draw(st.lists(ids, min_size=1, max_size=5).map(",".join))
            segment = draw(st.sampled_from([listed] * 4 + LONG_LISTS[op.id_name]))
        else:
            segment = draw(ids)
        path = path.replace("{}", segment)
    slash = draw(st.sampled_from(["", "/"]))
    return f"/v1.39.0/{path}{slash}", query_string(draw, PARAMS, max_size=5)


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(target=catalog_targets())
def test_random_requests_match_the_reference(
    serve_port: int, sample_data: reference.Data, client: Client, target: tuple[str, str]
) -> None:
    path, query = target
    got = client.request(serve_port, f"{path}?{query}" if query else path)
    expected = reference.answer_catalog(sample_data, unquote(path), query)
    assert (got.status, got.body) == expected, (path, query)


def test_the_reference_reads_the_sample_as_served(
    serve_port: int, sample_data: reference.Data, client: Client
) -> None:
    """Beside the random requests: every group's prices, every category's vocabularies, and
    every product and SKU through the id lists (250 at a time), with the extended fields."""
    paths = [f"pricing/group/{g}" for g in sample_data.groups]
    paths += [
        f"catalog/categories/{c}/{what}"
        for c in sample_data.categories
        for what in ("groups?limit=100", "conditions", "languages", "printings")
    ]
    for kind, ids in (
        ("product", sorted(sample_data.products)),
        ("sku", sorted(sample_data.skus)),
    ):
        for start in range(0, len(ids), 250):
            listed = ",".join(map(str, ids[start : start + 250]))
            paths.append(f"pricing/{kind}/{listed}")
            paths.append(f"catalog/{kind}s/{listed}?getExtendedFields=true&includeSkus=true")
    paths += [f"catalog/products?limit=100&offset={o}&getExtendedFields=true" for o in (0, 400)]
    paths += [
        f"catalog/groups?limit=100&sortOrder={field}&sortDesc={desc}"
        for field in reference.GROUP_FIELDS
        for desc in ("false", "true")
    ]
    for path in paths:
        target = f"/v1.39.0/{path}"
        resource, _, query = target.partition("?")
        got = client.request(serve_port, target)
        expected = reference.answer_catalog(sample_data, resource, query)
        assert (got.status, got.body) == expected, target
        assert got.status == 200, target


# --- nginx and the preview server ----------------------------------------------------------

AGREEMENT_QUERIES = [
    "",
    "?limit=10&offset=0",
    "?LIMIT=10&offset=010",
    "?offset=10",
    "?limit=0",
    "?offset=0&offset=x",
    "?getExtendedFields=true&includeSkus=TRUE",
    "?productTypes=Cards&foo",
    "?a=%ff",
    "?offset=" + "0" * 5000,  # more leading zeros than int() reads
]


def test_nginx_and_the_preview_server_agree(
    nginx_socket: Path, serve_port: int, client: Client
) -> None:
    """Every path shape of every operation, materialised or live: a known id, leading zeros
    (more than 19 digits too), an unknown id, a bad id, lists; odd query strings."""
    ids = {
        "categoryId": ["3", "003", "0" * 20 + "3", "0" * 5000 + "3", "9", "x"],
        "categoryIds": ["3", "3,1,3", "9,x"],
        "groupId": ["1009", "001009", "0" * 20 + "1009", "7", "-1"],
        "groupIds": ["1009", "1009,7", "x"],
        "productId": ["300001", "0300001", "42", "x"],
        "productIds": ["300001", "300001,42,300001", ",".join(["1"] * 251)],
        "skuIds": ["5000001", "5000001,4", "0"],
    }
    compared = 0
    for op in reference.CATALOG_OPS.values():
        for segment in ids.get(op.id_name or "", [""]):
            path = f"/v1.39.0/{op.path.replace('{}', segment)}"
            for query in [*AGREEMENT_QUERIES, "/", "/?limit=10&offset=0"]:
                both(nginx_socket, serve_port, path + query, client)
                compared += 1
            assert request(nginx_socket, path, "POST").status == 405
    for path in ("/v1.39.0/catalog/categories/3/rarities", "/v1.39.0/pricing/group/"):
        both(nginx_socket, serve_port, path, client)
    assert compared > 300


# --- every materialised page against the live answer ----------------------------------------


def test_materialised_pages_equal_their_live_answers(
    sample_build: Path, sample_data: reference.Data
) -> None:
    """Each catalog and price page of the sample build, answered live from the warehouse (no
    site), has the page's bytes; and the pages are those of every category's vocabularies,
    groups and search manifest and every group's prices."""
    targets = [
        t
        for t in materialised_targets(sample_build)
        if t.startswith(("/v1.39.0/catalog/", "/v1.39.0/pricing/"))
    ]
    con = db.connect(sample_build / "warehouse.duckdb", read_only=True)
    try:
        for target in targets:
            live = answer(con, target, site=None)
            page = answer(con, target, site=sample_build / "site")
            assert (live.status, live.body) == (200, page.body), target
    finally:
        con.close()
    resources = {t.partition("?")[0] for t in targets}
    expected = {"/v1.39.0/catalog/conditions", "/v1.39.0/catalog/categories"}
    expected |= {f"/v1.39.0/pricing/group/{g}" for g in sample_data.groups}
    expected |= {
        f"/v1.39.0/catalog/categories/{c}/{what}"
        for c in sample_data.categories
        for what in ("groups", "conditions", "languages", "printings", "search/manifest")
    }
    assert resources == expected


# --- tiny inputs, checked by hand ----------------------------------------------------------

CATEGORIES = [{"categoryId": 1, "name": "Magic"}, {"categoryId": 2, "name": "Pokemon"}]
GROUPS = [
    {"groupId": 10, "categoryId": 1, "name": "beta", "abbreviation": "B"},
    {"groupId": 11, "categoryId": 1, "name": "Alpha", "isSupplemental": True},
    {"groupId": 20, "categoryId": 2, "name": "Base"},
    {"groupId": 30, "categoryId": 2, "name": "Empty"},
]
PRODUCTS = [
    *BASE_TABLES["products"],  # Sol Ring (100) and Black Lotus (101)
    {
        "productId": 102,
        "categoryId": 1,
        "groupId": 10,
        "name": "No Skus",
        "rarity": None,
        "number": "1",
    },
    {
        "productId": 200,
        "categoryId": 2,
        "groupId": 20,
        "name": "Pikachu",
        "rarity": None,
        "number": None,
    },
]


def _sku(
    sku_id: int, product_id: int, condition: int, language: int, printing: int
) -> dict[str, int]:
    return {
        "skuId": sku_id,
        "productId": product_id,
        "conditionId": condition,
        "languageId": language,
        "printingId": printing,
    }


SKUS = [
    _sku(1000, 100, 1, 1, 1),
    _sku(1001, 100, 2, 1, 2),
    _sku(1002, 100, 1, 2, 1),  # a language with no row
    _sku(1010, 101, 1, 1, 1),
    _sku(1011, 101, 3, 1, 9),  # a condition and a printing with no row
    _sku(2000, 200, 1, 1, 1),
]
CONDITIONS = [
    {"conditionId": 1, "name": "Near Mint", "abbreviation": "NM", "displayOrder": 2},
    {"conditionId": 2, "name": "Lightly Played", "abbreviation": "LP", "displayOrder": 1},
    {"conditionId": 5, "name": "Unopened", "abbreviation": None, "displayOrder": None},
    {"conditionId": 4, "name": "Damaged", "abbreviation": "DMG", "displayOrder": None},
]


def _listing(store: str, sku: int, price: str, quantity: int, **kw: Any) -> dict[str, Any]:
    return {"storeKey": store, "skuId": sku, "price": price, "quantity": quantity, **kw}


LISTINGS = [
    # Product 100, Normal (SKUs 1000, 1002): 1.00, 2.00, 3.00 and a custom 4.00: an even count.
    _listing("s1", 1000, "1.00", 1),
    _listing("s2", 1000, "3.00", 5),
    _listing("s1", 1000, "4.00", 1, isCustom=True, storePriceCustomId=7),
    _listing("s3", 1002, "2.00", 1),  # s3 excludes category 1 on channel 1 only
    _listing("s1", 1000, "0.10", 3, channelId=1),  # not the marketplace
    _listing("s2", 1002, "0.20", 0),  # none for sale
    # Product 100, Foil (SKU 1001): 5.00 twice and 7.00: an odd count, equal prices.
    _listing("s1", 1001, "5.00", 2),
    _listing("s2", 1001, "5.00", 1),
    _listing("s3", 1001, "7.00", 3),
    # Product 101: one listing of its Normal printing, none of printing 9.
    _listing("s2", 1010, "9.99", 4),
    # Product 200 (Pokemon, which S1 excludes on channel 0): 1.50 and 2.50 from the others.
    _listing("s1", 2000, "0.50", 9),
    _listing("s2", 2000, "2.50", 2),
    _listing("s3", 2000, "1.50", 1),
]
EXCLUDED = [
    {"storeKey": "S1", "channelId": 0, "categoryId": 2},
    {"storeKey": "s2", "channelId": 1, "categoryId": 2},
    {"storeKey": "s3", "channelId": 1, "categoryId": 1},
]


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_inputs(
        tmp_path_factory.mktemp("catalog"),
        categories=CATEGORIES,
        groups=GROUPS,
        products=PRODUCTS,
        skus=SKUS,
        conditions=CONDITIONS,
        listings=LISTINGS,
        excluded_categories=EXCLUDED,
    )


@pytest.fixture(scope="module")
def tiny(tiny_dir: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    con = run_pipeline(tiny_dir)
    yield con
    con.close()


def get(con: duckdb.DuckDBPyConnection, target: str) -> tuple[int, Any]:
    response = answer(con, target)
    return response.status, json.loads(response.body)


def ok(results: list[Any], errors: list[str] | None = None) -> dict[str, Any]:
    return {"success": True, "errors": errors or [], "results": results}


def failed(*messages: str) -> dict[str, Any]:
    return {"success": False, "errors": list(messages), "results": []}


def price(
    product: int, low: float | None, mid: float | None, high: float | None, sub: str | None
) -> dict[str, Any]:
    return {
        "productId": product,
        "lowPrice": low,
        "midPrice": mid,
        "highPrice": high,
        "marketPrice": None,
        "directLowPrice": None,
        "subTypeName": sub,
    }


def test_group_prices(tiny: duckdb.DuckDBPyConnection) -> None:
    """The median of an even count is the lower middle price (2.00 of 1, 2, 3, 4: a custom
    listing counts), of an odd count the middle one (5.00 of 5, 5, 7); channel 1 and quantity 0
    are left out; a printing with no listing has nulls, with no row a null subTypeName; a
    product with no SKUs has no entry."""
    assert get(tiny, "/v1.39.0/pricing/group/10") == (
        200,
        ok(
            [
                price(100, 1.0, 2.0, 4.0, "Normal"),
                price(100, 5.0, 5.0, 7.0, "Foil"),
                price(101, 9.99, 9.99, 9.99, "Normal"),
                price(101, None, None, None, None),
            ]
        ),
    )
    # S1 excludes Pokemon on channel 0 (the key in any case): its 0.50 is no market listing.
    assert get(tiny, "/v1.39.0/pricing/group/20") == (
        200,
        ok([price(200, 1.5, 1.5, 2.5, "Normal")]),
    )
    for group in ("30", "11", "99", "-1"):  # no products, none with SKUs, unknown
        assert get(tiny, f"/v1.39.0/pricing/group/{group}") == (
            404,
            failed("No products were found."),
        )


def test_product_and_sku_prices(tiny: duckdb.DuckDBPyConnection) -> None:
    assert get(tiny, "/v1.39.0/pricing/product/200,999,101,102,999,200") == (
        207,
        ok(
            [
                price(200, 1.5, 1.5, 2.5, "Normal"),
                price(101, 9.99, 9.99, 9.99, "Normal"),
                price(101, None, None, None, None),
            ],
            ["No product price was found for productId 999."],  # 102 has no SKUs: no error
        ),
    )
    assert get(tiny, "/v1.39.0/pricing/product/102") == (404, failed("No products were found."))
    assert get(tiny, "/v1.39.0/pricing/sku/1011,1000,5,1002,5") == (
        207,
        ok(
            [
                {
                    "skuId": 1011,
                    "lowPrice": None,
                    "lowestShipping": None,
                    "lowestListingPrice": None,
                    "marketPrice": None,
                    "directLowPrice": None,
                },
                {
                    "skuId": 1000,
                    "lowPrice": 1.0,
                    "lowestShipping": None,
                    "lowestListingPrice": 1.0,
                    "marketPrice": None,
                    "directLowPrice": None,
                },
                {
                    "skuId": 1002,
                    "lowPrice": 2.0,
                    "lowestShipping": None,
                    "lowestListingPrice": 2.0,
                    "marketPrice": None,
                    "directLowPrice": None,
                },
            ],
            ["No SKU market price was found for skuId 5."],
        ),
    )
    assert get(tiny, "/v1.39.0/pricing/sku/5,6") == (
        404,
        failed("No SKU market prices were found."),
    )


def test_the_market_marts(tiny: duckdb.DuckDBPyConnection) -> None:
    """Per SKU and per product x printing: the prices, and the listings, stores and quantity
    behind them (a store's generic and custom listings of one SKU are two listings)."""
    assert rows(
        tiny,
        "select sku_id, product_id, group_id, category_id, printing_id, low_price, high_price,"
        " listing_count, store_count, quantity from marts.sku_market order by sku_id",
    ) == [
        (1000, 100, 10, 1, 1, Decimal("1.00"), Decimal("4.00"), 3, 2, 7),
        (1001, 100, 10, 1, 2, Decimal("5.00"), Decimal("7.00"), 3, 3, 6),
        (1002, 100, 10, 1, 1, Decimal("2.00"), Decimal("2.00"), 1, 1, 1),
        (1010, 101, 10, 1, 1, Decimal("9.99"), Decimal("9.99"), 1, 1, 4),
        (1011, 101, 10, 1, 9, None, None, 0, 0, 0),
        (2000, 200, 20, 2, 1, Decimal("1.50"), Decimal("2.50"), 2, 2, 3),
    ]
    assert rows(
        tiny,
        "select product_id, printing_id, group_id, category_id, printing_name, low_price,"
        " mid_price, high_price, sku_count, listing_count, store_count, quantity"
        " from marts.product_market order by product_id, printing_id",
    ) == [
        (100, 1, 10, 1, "Normal", Decimal("1.00"), Decimal("2.00"), Decimal("4.00"), 2, 4, 3, 8),
        (100, 2, 10, 1, "Foil", Decimal("5.00"), Decimal("5.00"), Decimal("7.00"), 1, 3, 3, 6),
        (101, 1, 10, 1, "Normal", Decimal("9.99"), Decimal("9.99"), Decimal("9.99"), 1, 1, 1, 4),
        (101, 9, 10, 1, None, None, None, None, 1, 0, 0, 0),
        (200, 1, 20, 2, "Normal", Decimal("1.50"), Decimal("1.50"), Decimal("2.50"), 1, 2, 2, 3),
    ]


def test_the_reference_model_agrees_on_the_tiny_input(
    tiny: duckdb.DuckDBPyConnection, tiny_dir: Path
) -> None:
    """The hand-checked answers above are the reference model's too."""
    data = reference.load_directory(tiny_dir)
    for path in (
        "pricing/group/10",
        "pricing/group/20",
        "pricing/product/200,999,101,102,999,200",
        "pricing/sku/1011,1000,5,1002,5",
        "catalog/products?getExtendedFields=true&includeSkus=true",
        "catalog/categories/1/conditions",
        "catalog/conditions",
    ):
        resource, _, query = f"/v1.39.0/{path}".partition("?")
        response = answer(tiny, f"/v1.39.0/{path}")
        assert (response.status, response.body) == reference.answer_catalog(
            data, resource, query
        ), path


def product(product_id: int, name: str, category: int, group: int, **more: Any) -> dict[str, Any]:
    return {
        "productId": product_id,
        "name": name,
        "cleanName": None,
        "imageUrl": None,
        "categoryId": category,
        "groupId": group,
        "url": None,
        "modifiedOn": None,
        "imageCount": None,
        "presaleInfo": None,
        **more,
    }


def test_products_with_absent_optional_columns(tiny: duckdb.DuckDBPyConnection) -> None:
    """Every key of the shape, null where the input has no column; extendedData derived from
    the number and the rarity, each where not null, `[]` with neither; skus by skuId."""
    number = {"name": "Number", "displayName": "Card Number", "value": "270"}
    rarity = {"name": "Rarity", "displayName": "Rarity", "value": "Uncommon"}
    assert get(tiny, "/v1.39.0/catalog/products/100,200,101,102?getExtendedFields=true") == (
        200,
        ok(
            [
                product(100, "Sol Ring", 1, 10, extendedData=[number, rarity]),
                product(200, "Pikachu", 2, 20, extendedData=[]),
                product(101, "Black Lotus", 1, 10, extendedData=[{**rarity, "value": "Rare"}]),
                product(102, "No Skus", 1, 10, extendedData=[{**number, "value": "1"}]),
            ]
        ),
    )
    status, body = get(tiny, "/v1.39.0/catalog/products?includeSkus=true&limit=2")
    assert status == 200 and body["totalItems"] == 4
    assert body["results"] == [
        product(
            101,
            "Black Lotus",
            1,
            10,
            skus=[
                {k: s[k] for k in ("skuId", "productId", "languageId", "printingId", "conditionId")}
                for s in SKUS[3:5]
            ],
        ),
        product(102, "No Skus", 1, 10, skus=[]),
    ]
    assert list(body["results"][0]["skus"][0]) == [
        "skuId",
        "productId",
        "languageId",
        "printingId",
        "conditionId",
    ]


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("catalog/categories/9/groups", "No groups were found."),
        ("catalog/categories/1/groups?offset=2", "No groups were found."),
        ("catalog/categories/9/conditions", "No conditions were found."),
        ("catalog/categories/9/languages", "No languages were found."),
        ("catalog/categories/9/printings", "No printings were found."),
        ("catalog/categories/9,8", "No categories were found."),
        ("catalog/groups/9,-1", "No groups were found."),
        ("catalog/products?productName=zzz", "No products were found."),
        ("catalog/products?offset=4", "No products were found."),
        ("catalog/products/9,0", "No products were found."),
        ("catalog/products/102/skus", "No SKUs were found."),
        ("catalog/products/999/skus", "No SKUs were found."),
        ("catalog/skus/9", "No SKUs were found."),
        ("pricing/group/30", "No products were found."),
        ("pricing/product/9", "No products were found."),
        ("pricing/sku/9", "No SKU market prices were found."),
        ("catalog/categories/1/rarities", "URL not found."),
    ],
)
def test_not_found(tiny: duckdb.DuckDBPyConnection, path: str, message: str) -> None:
    assert get(tiny, f"/v1.39.0/{path}") == (404, failed(message))


@pytest.mark.parametrize(
    ("path", "missing", "found"),
    [
        ("catalog/categories/7,2,7,1,6", "No category was found for categoryId {}.", [2, 1]),
        ("catalog/groups/7,30,7,10,6", "No group was found for groupId {}.", [30, 10]),
        ("catalog/products/7,200,7,100,6", "No product was found for productId {}.", [200, 100]),
        ("catalog/skus/7,2000,7,1000,6", "No SKU was found for skuId {}.", [2000, 1000]),
    ],
)
def test_partly_found_lists(
    tiny: duckdb.DuckDBPyConnection, path: str, missing: str, found: list[int]
) -> None:
    """207 with success true: the ids found in the order given, one error per id not found in
    the order given, an unknown id given twice once."""
    status, body = get(tiny, f"/v1.39.0/{path}")
    assert status == 207
    assert body["success"] is True
    assert body["errors"] == [missing.format(7), missing.format(6)]
    assert [next(iter(r.values())) for r in body["results"]] == found


def test_vocabularies(tiny: duckdb.DuckDBPyConnection) -> None:
    """catalog/conditions by displayOrder (nulls last) then conditionId, a category's in the
    same order and only those with a row; languages by languageId; printings."""
    c = {r["conditionId"]: r for r in CONDITIONS}
    assert get(tiny, "/v1.39.0/catalog/conditions") == (200, ok([c[2], c[1], c[4], c[5]]))
    assert get(tiny, "/v1.39.0/catalog/categories/1/conditions") == (200, ok([c[2], c[1]]))
    assert get(tiny, "/v1.39.0/catalog/categories/2/conditions") == (200, ok([c[1]]))
    english = {"languageId": 1, "name": "English", "abbr": "EN"}
    assert get(tiny, "/v1.39.0/catalog/categories/1/languages") == (200, ok([english]))
    normal = {"printingId": 1, "name": "Normal", "displayOrder": None, "modifiedOn": None}
    foil = {**normal, "printingId": 2, "name": "Foil"}
    assert get(tiny, "/v1.39.0/catalog/categories/1/printings") == (200, ok([normal, foil]))
    assert get(tiny, "/v1.39.0/catalog/categories/2/printings") == (200, ok([normal]))


def test_category_groups(tiny: duckdb.DuckDBPyConnection) -> None:
    alpha = {
        "groupId": 11,
        "name": "Alpha",
        "abbreviation": None,
        "isSupplemental": True,
        "publishedOn": None,
        "modifiedOn": None,
        "categoryId": 1,
    }
    beta = {**alpha, "groupId": 10, "name": "beta", "abbreviation": "B", "isSupplemental": None}
    assert get(tiny, "/v1.39.0/catalog/categories/1/groups") == (
        200,
        {"totalItems": 2, **ok([alpha, beta])},
    )
    assert get(tiny, "/v1.39.0/catalog/categories/1/groups?offset=1&limit=1") == (
        200,
        {"totalItems": 2, **ok([beta])},
    )
    assert get(tiny, "/v1.39.0/catalog/groups/10,11") == (200, ok([beta, alpha]))


def test_every_group(tiny: duckdb.DuckDBPyConnection, tiny_dir: Path) -> None:
    """`catalog/groups`: every group, filtered by category (id, or name in any case) and
    isSupplemental (a null matches neither value), by sortOrder's field (nulls the smallest),
    ties by groupId; paged; an unknown sortOrder is a 400 naming it; hasSealed is ignored."""

    def ids(query: str) -> list[int]:
        status, body = get(tiny, f"/v1.39.0/catalog/groups{query}")
        assert status == 200, (query, body)
        return [g["groupId"] for g in body["results"]]

    # Alpha, Base, beta, Empty: lower-cased names, in code-point order
    assert ids("") == [11, 20, 10, 30]
    assert get(tiny, "/v1.39.0/catalog/groups?limit=1&offset=1")[1]["totalItems"] == 4
    assert ids("?limit=2&offset=1") == [20, 10]
    assert ids("?categoryId=2") == [20, 30]
    assert ids("?categoryName=MAGIC&hasSealed=x") == [11, 10]
    assert ids("?isSupplemental=TRUE") == [11]
    assert get(tiny, "/v1.39.0/catalog/groups?isSupplemental=false") == (
        404,
        failed("No groups were found."),
    )
    assert ids("?sortOrder=ABBREVIATION") == [11, 20, 30, 10]  # three nulls first, by groupId
    assert ids("?sortOrder=abbreviation&sortDesc=true") == [10, 11, 20, 30]  # nulls last
    assert ids("?sortOrder=isSupplemental&sortDesc=true") == [11, 10, 20, 30]
    assert ids("?sortOrder=categoryId&sortDesc=true") == [20, 30, 10, 11]
    assert ids("?sortOrder=") == [11, 20, 10, 30]
    assert get(tiny, "/v1.39.0/catalog/groups?categoryId=3") == (
        404,
        failed("No groups were found."),
    )
    assert get(tiny, "/v1.39.0/catalog/groups?sortOrder=popularity&isSupplemental=1") == (
        400,
        failed(
            "The value '1' is not valid for isSupplemental.",
            "The value 'popularity' is not valid for sortOrder. Use a field of the group: "
            "groupId, name, abbreviation, isSupplemental, publishedOn, modifiedOn, categoryId.",
        ),
    )
    data = reference.load_directory(tiny_dir)  # and the reference model agrees
    for query in ("", "sortOrder=abbreviation&sortDesc=true", "isSupplemental=true&limit=1"):
        response = answer(tiny, f"/v1.39.0/catalog/groups?{query}")
        expected = reference.answer_catalog(data, "/v1.39.0/catalog/groups", query)
        assert (response.status, response.body) == expected, query


MANY = ",".join(["100"] * 250)


@pytest.mark.parametrize(
    ("path", "errors"),
    [
        # The path id first, then the query's parameters; 400 before any 404.
        (
            "catalog/products/x,100?getExtendedFields=maybe&includeSkus=",
            [
                "The value 'x,100' is not valid for productIds.",
                "The value 'maybe' is not valid for getExtendedFields.",
                "The value '' is not valid for includeSkus.",
            ],
        ),
        ("catalog/categories/999/groups?limit=0", ["limit must be between 1 and 100."]),
        (
            "catalog/categories/2147483648/groups?offset=-1",
            [
                "The value '2147483648' is not valid for categoryId.",
                "offset must be greater than or equal to 0.",
            ],
        ),
        ("catalog/groups/1,,2", ["The value '1,,2' is not valid for groupIds."]),
        (
            "pricing/group/9223372036854775808",
            ["The value '9223372036854775808' is not valid for groupId."],
        ),
        ("catalog/products/1.0/skus", ["The value '1.0' is not valid for productId."]),
        # Ids as given: 251 of the same id is too many; a bad one among them is named first.
        (f"catalog/products/{MANY},100", ["productIds must hold between 1 and 250 ids."]),
        (f"pricing/sku/{MANY},9", ["skuIds must hold between 1 and 250 ids."]),
        (f"catalog/skus/{MANY},x", [f"The value '{MANY},x' is not valid for skuIds."]),
        (
            "catalog/products?categoryId=x&groupId=1.5&offset=a&limit=101",
            [
                "The value 'x' is not valid for categoryId.",
                "The value '1.5' is not valid for groupId.",
                "The value 'a' is not valid for offset.",
                "limit must be between 1 and 100.",
            ],
        ),
    ],
)
def test_bad_requests(tiny: duckdb.DuckDBPyConnection, path: str, errors: list[str]) -> None:
    assert get(tiny, f"/v1.39.0/{path}") == (400, failed(*errors))


def test_250_ids_are_enough(tiny: duckdb.DuckDBPyConnection) -> None:
    assert get(tiny, f"/v1.39.0/catalog/products/{MANY}")[1]["results"] == [
        product(100, "Sol Ring", 1, 10)
    ]
    assert get(tiny, f"/v1.39.0/pricing/product/{MANY}")[0] == 200


def test_ids_and_integers_with_many_leading_zeros(tiny: duckdb.DuckDBPyConnection) -> None:
    """Leading zeros are plain decimal, in a path id as in a query's integer, however many
    (more than int() reads; the materialised pages' nginx locations fold them too)."""
    zeros = "0" * 4400
    status, body = get(tiny, f"/v1.39.0/catalog/categories/{zeros}1/groups?offset=1")
    assert (status, [g["groupId"] for g in body["results"]]) == (200, [10])
    status, body = get(tiny, f"/v1.39.0/catalog/categories/1/groups?offset={zeros}1&limit=01")
    assert (status, [g["groupId"] for g in body["results"]]) == (200, [10])
    assert get(tiny, f"/v1.39.0/catalog/categories/1/groups?limit={zeros}") == (
        400,
        failed("limit must be between 1 and 100."),
    )
    status, body = get(tiny, f"/v1.39.0/catalog/products/{'0' * 30}100,{zeros}200")
    assert (status, [p["productId"] for p in body["results"]]) == (200, [100, 200])
    assert get(tiny, f"/v1.39.0/pricing/group/{zeros}10")[0] == 200
    assert get(tiny, f"/v1.39.0/catalog/skus/{zeros}99999999999999999999") == (
        400,
        failed(f"The value '{zeros}99999999999999999999' is not valid for skuIds."),
    )


# --- the optional product and printing columns, in every input format ------------------------

PRESALE = {"isPresale": True, "releasedOn": "2026-01-16", "note": "Ships late"}
EXTENDED = [
    {"name": "Number", "displayName": "Card Number", "value": "270"},
    {"name": "CardText", "displayName": "Card Text", "value": "<p>Tap: add ⓒ.</p>"},
]
RICH_PRODUCTS: list[dict[str, Any]] = [
    {
        **PRODUCTS[0],
        "cleanName": "Sol Ring",
        "imageUrl": "https://img/100.jpg",
        "url": "https://p/100",
        "modifiedOn": "2025-12-04T15:00:29.800",
        "imageCount": 2,
        "presaleInfo": PRESALE,
        "extendedData": EXTENDED,
    },
    # Every optional column null: extendedData derived (here from the rarity alone).
    {**PRODUCTS[1], "presaleInfo": None, "extendedData": None},
    # An empty list is the input's list as given.
    {**PRODUCTS[2], "cleanName": "No Skus", "extendedData": []},
    PRODUCTS[3],  # no value given at all
]
RICH_PRINTINGS = [
    {"printingId": 1, "name": "Normal", "foil": False, "displayOrder": 2},
    {"printingId": 2, "name": "Foil", "foil": True, "displayOrder": 1, "modifiedOn": "2024-05-01"},
]


def _as_text(row: dict[str, Any]) -> dict[str, Any]:
    """presaleInfo and extendedData as JSON text, as a CSV or NDJSON input may give them."""
    return {
        k: json.dumps(v) if k in ("presaleInfo", "extendedData") and v is not None else v
        for k, v in row.items()
    }


def write_rich_products(input_dir: Path, fmt: str) -> None:
    """The products of RICH_PRODUCTS as the format gives them, instead of the CSV."""
    (input_dir / "catalog" / "products.csv").unlink()
    if fmt == "csv":
        write_table(input_dir, "products", [_as_text(r) for r in RICH_PRODUCTS])
    elif fmt == "ndjson-nested":
        write_table(input_dir, "products", RICH_PRODUCTS, "ndjson")
    elif fmt == "ndjson-text":
        write_table(input_dir, "products", [_as_text(r) for r in RICH_PRODUCTS], "ndjson")
    elif fmt == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        columns = list(dict.fromkeys(k for r in RICH_PRODUCTS for k in r))
        table = pa.Table.from_pylist([{c: r.get(c) for c in columns} for r in RICH_PRODUCTS])
        pq.write_table(table, input_dir / "catalog" / "products.parquet")
    else:  # a catalog API dump: rarity and number are extendedData entries there
        dump = [
            {k: v for k, v in r.items() if k not in ("rarity", "number")} for r in RICH_PRODUCTS
        ]
        folder = input_dir / "catalog" / "products"
        folder.mkdir()
        (folder / "page-1.json").write_text(
            json.dumps({"success": True, "errors": [], "results": dump}), encoding="utf-8"
        )


FORMATS = [
    "csv",
    "ndjson-nested",
    "ndjson-text",
    "parquet",
    "api-dump",
]


@pytest.mark.parametrize("fmt", FORMATS)
def test_optional_catalog_columns_in_every_format(tmp_path: Path, fmt: str) -> None:
    """The reference model reads each format's optional columns (checked here by hand), and
    the pipeline answers as the reference model does."""
    input_dir = write_inputs(
        tmp_path, categories=CATEGORIES, groups=GROUPS, skus=SKUS, printings=RICH_PRINTINGS
    )
    write_rich_products(input_dir, fmt)
    full = reference.load_directory(input_dir)
    dumped = fmt == "api-dump"
    assert [full.products[i] for i in (100, 101, 102, 200)] == [
        {
            **PRODUCTS[0],
            "cleanName": "Sol Ring",
            "imageUrl": "https://img/100.jpg",
            "url": "https://p/100",
            "modifiedOn": "2025-12-04T15:00:29.8",
            "imageCount": 2,
            "presaleInfo": {**PRESALE, "releasedOn": "2026-01-16T00:00:00"},
            "extendedData": EXTENDED,
            **({"rarity": None} if dumped else {}),
        },
        {**PRODUCTS[1], **dict.fromkeys(reference.CATALOG_COLUMNS["products"])}
        | ({"rarity": None} if dumped else {}),
        {**PRODUCTS[2], **dict.fromkeys(reference.CATALOG_COLUMNS["products"])}
        | {"cleanName": "No Skus", "extendedData": []}
        | ({"number": None} if dumped else {}),
        {**PRODUCTS[3], **dict.fromkeys(reference.CATALOG_COLUMNS["products"])},
    ]
    assert [r["displayOrder"] for r in full.printing_rows.values()] == [2, 1]
    assert full.printing_rows[2]["modifiedOn"] == "2024-05-01T00:00:00"

    con = run_pipeline(input_dir)
    try:
        for path in (
            "catalog/products?getExtendedFields=true&includeSkus=true",
            "catalog/products/102,200,100,101?getExtendedFields=true",
            "catalog/categories/1/printings",
            "pricing/group/10",
        ):
            resource, _, query = f"/v1.39.0/{path}".partition("?")
            response = answer(con, f"/v1.39.0/{path}")
            expected = reference.answer_catalog(full, resource, query)
            assert (response.status, response.body) == expected, path
    finally:
        con.close()
