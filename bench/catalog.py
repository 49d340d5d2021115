"""`make bench`'s live figures of the catalog and price operations (docs/contract.md §7) and of
the searches (§12), for `bench.live`: their requests, and the largest group's prices and the
largest category's manifest answered from the warehouse."""

from __future__ import annotations

import json
import time
from pathlib import Path

from bench.servers import Request, percentiles, warehouse
from pipeline import db
from pipeline.serve import routes

IDS = 50  # ids a request of a list operation names


def catalog_targets(output: Path, pages: int) -> dict[str, list[str]]:
    """Each catalog figure's requests, `pages` of each: lists of IDS listed SKUs or products (a
    deterministic spread over the catalog), the pages of the category with the most products
    (filtered by it), and its pages filtered by a name too (`productName`: a substring, which
    reads every name of the category)."""
    with warehouse(output) as con:

        def ids(sql: str) -> list[str]:
            found = [str(r[0]) for r in con.execute(sql, [IDS * pages]).fetchall()]
            return [",".join(found[i : i + IDS]) for i in range(0, len(found), IDS)]

        skus = ids(
            "SELECT sku_id FROM marts.sku_market WHERE listing_count > 0 "
            "ORDER BY hash(sku_id), sku_id LIMIT $1"
        )
        products = ids(
            "SELECT product_id FROM staging.products ORDER BY hash(product_id), product_id LIMIT $1"
        )
        category = con.execute(
            "SELECT category_id FROM staging.products GROUP BY ALL ORDER BY count(*) DESC, 1 "
            "LIMIT 1"
        ).fetchall()[0][0]
    query = f"categoryId={category}"
    return {
        "pricing_sku_50": [f"/v1.39.0/pricing/sku/{i}" for i in skus],
        "pricing_product_50": [f"/v1.39.0/pricing/product/{i}" for i in products],
        "catalog_products_50": [f"/v1.39.0/catalog/products/{i}" for i in products],
        "catalog_products_filtered": [
            f"/v1.39.0/catalog/products?{query}&offset={10 * page}" for page in range(pages)
        ],
        "catalog_products_named": [
            f"/v1.39.0/catalog/products?{query}&productName=a&offset={10 * page}"
            for page in range(pages)
        ],
    }


def largest_group_prices(output: Path, count: int) -> dict[str, float]:
    """`pricing/group` of the group with the most entries, answered from the warehouse as
    `pipeline serve` answers a request its site has no page for (in process: the site has
    every group's page)."""
    with warehouse(output) as con:
        group = con.execute(
            "SELECT group_id FROM marts.product_market GROUP BY ALL ORDER BY count(*) DESC, 1 "
            "LIMIT 1"
        ).fetchall()[0][0]
        target = f"/v1.39.0/pricing/group/{group}"
        timings = []
        for _ in range(count):
            started = time.perf_counter()
            assert routes.answer(con, target).status == 200
            timings.append(time.perf_counter() - started)
    p50, p95 = percentiles(timings)
    return {"live_pricing_group_largest_p50_ms": p50, "live_pricing_group_largest_p95_ms": p95}


# The sorts a search's pages turn through.
SEARCH_SORTS = ("Relevance", "MinPrice ASC", "ProductName ASC")
LARGEST_CATEGORY = (
    "SELECT category_id FROM staging.products GROUP BY ALL ORDER BY count(*) DESC, 1 LIMIT 1"
)


def search_targets(output: Path, store_key: str, pages: int) -> dict[str, list[Request]]:
    """The searches' requests: the largest category's products whose name contains `a` (every
    name of the category read), its first `pages` pages in turn; and the store's search in its
    category with the most listings for sale, each sort's first pages in turn."""
    with warehouse(output) as con:
        category = con.execute(LARGEST_CATEGORY).fetchall()[0][0]
        own = con.execute(
            "SELECT category_id FROM marts.listing WHERE store_key = ? AND channel_id = 0 "
            "AND quantity > 0 GROUP BY ALL ORDER BY count(*) DESC, 1 LIMIT 1",
            [store_key],
        ).fetchall()[0][0]
    named = {"filters": [{"name": "ProductName", "values": ["a"]}]}
    store = f"/v1.39.0/stores/{store_key}/inventory/categories/{own}/search"
    return {
        "catalog_search_named": [
            (
                f"/v1.39.0/catalog/categories/{category}/search",
                json.dumps({**named, "offset": 10 * page}).encode(),
            )
            for page in range(pages)
        ],
        "store_search_largest": [
            (store, json.dumps({"sort": sort, "offset": 10 * page}).encode())
            for page in range(pages)
            for sort in SEARCH_SORTS
        ],
    }


def largest_manifest(output: Path, count: int) -> dict[str, float]:
    """The search manifest of the category with the most products, answered from the warehouse
    as `pipeline serve` answers a category with no page (in process: the site has every
    category's page)."""
    with warehouse(output) as con:
        con.execute(db.MACROS)
        category = con.execute(LARGEST_CATEGORY).fetchall()[0][0]
        target = f"/v1.39.0/catalog/categories/{category}/search/manifest"
        timings = []
        for _ in range(count):
            started = time.perf_counter()
            assert routes.answer(con, target).status == 200
            timings.append(time.perf_counter() - started)
    p50, p95 = percentiles(timings)
    return {"live_manifest_largest_p50_ms": p50, "live_manifest_largest_p95_ms": p95}
