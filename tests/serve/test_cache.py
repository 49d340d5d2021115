"""Live answers kept whole (`pipeline.serve.cache`, issue 22): a small store's page is a slice of
its combination's whole answer, with the bytes the page's own SQL run gives; a store past
`cache_store_listings` is answered a page at a time."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from pipeline.serve.cache import Answer, AnswerCache
from pipeline.serve.routes import answer
from tests.conftest import run_pipeline, write_inputs
from tests.serve.test_inventory import CATALOG, LISTINGS, L

BIG = [L("big", sku, f"{sku % 7}.50") for sku in (1000, 1001, 1002, 1010, 1020, 3000)]


class Counting:
    """A warehouse that counts the statements run on it."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.con, self.statements = con, 0

    def __call__(self) -> Counting:
        return self

    def execute(self, sql: str, params: object = None) -> duckdb.DuckDBPyConnection:
        self.statements += 1
        return self.con.execute(sql, params)


@pytest.fixture(scope="module")
def con(tmp_path_factory: pytest.TempPathFactory) -> duckdb.DuckDBPyConnection:
    inputs = write_inputs(tmp_path_factory.mktemp("cache"), **CATALOG, listings=LISTINGS + BIG)
    return run_pipeline(inputs)


TARGETS = [
    "/v1.39.0/stores/shop/inventory/products?sort=name&limit=1&offset={n}",
    "/v1.39.0/stores/shop/inventory/products?limit=2&offset={n}&skuLimit=1",
    "/v1.39.0/stores/shop/inventory/skuprices?limit=2&offset={n}",
    "/v1.39.0/stores/shop/inventory/products/100/skus?limit=1&offset={n}",
    "/v1.39.0/stores/shop/inventory/products/100/quantity?offset={n}",
    "/v1.39.0/stores/shop/inventory/groups?includeExcludedCategories=true&offset={n}",
]


@pytest.mark.parametrize("target", TARGETS)
def test_every_page_is_the_pages_own_answer_and_the_sql_runs_once(
    con: duckdb.DuckDBPyConnection, target: str
) -> None:
    cache = AnswerCache(2**20, store_listings=1000)
    warehouse = Counting(con)
    pages = [target.format(n=3 * n) for n in range(6)]
    kept = [answer(warehouse, page, None, cache) for page in pages]  # type: ignore[arg-type]
    asked = warehouse.statements
    again = [answer(warehouse, page, None, cache) for page in pages]  # type: ignore[arg-type]
    alone = [answer(con, page) for page in pages]
    assert [(r.status, r.body) for r in kept] == [(r.status, r.body) for r in alone]
    assert [(r.status, r.body) for r in again] == [(r.status, r.body) for r in alone]
    assert alone[0].status == 200
    assert alone[-1].status == (200 if "quantity" in target else 404)  # past the last page
    # One run for the whole answer, one for the store sizes, a lookup for each empty page's 404.
    assert asked == 2 + sum(r.status == 404 for r in alone)
    assert warehouse.statements == asked + sum(r.status == 404 for r in alone)


def test_a_store_past_the_bound_is_answered_a_page_at_a_time(
    con: duckdb.DuckDBPyConnection,
) -> None:
    cache = AnswerCache(2**20, store_listings=len(BIG) - 1)
    warehouse = Counting(con)
    target = "/v1.39.0/stores/big/inventory/products?sort=name&limit=2"
    replies = [answer(warehouse, target, None, cache) for _ in range(3)]  # type: ignore[arg-type]
    assert {r.body for r in replies} == {answer(con, target).body}
    assert warehouse.statements == 1 + 3  # the sizes once, then every page is asked
    assert cache.get(("anything",)) is None


def test_an_unknown_store_is_still_404_no_stores(con: duckdb.DuckDBPyConnection) -> None:
    cache = AnswerCache(2**20, store_listings=1000)
    reply = answer(con, "/v1.39.0/stores/nowhere/inventory/products?sort=name", None, cache)
    assert (reply.status, reply.body) == (
        404,
        answer(con, "/v1.39.0/stores/nowhere/inventory/products?sort=name").body,
    )
    assert b"No stores were found." in reply.body


def test_the_least_recently_used_answers_go_first_past_the_bound() -> None:
    one = Answer(1, (b"x" * 100,))
    cache = AnswerCache(3 * one.size, store_listings=1000)
    for key in "abc":
        cache.put(key, one)
    assert cache.get("a") is one  # a is now the most recently used
    cache.put("d", one)
    assert [cache.get(k) is not None for k in "abcd"] == [True, False, True, True]
    cache.put("huge", Answer(1, (b"x" * 10_000,)))  # larger than the whole cache: not kept
    assert cache.get("huge") is None and cache.get("d") is one


def test_no_cache_with_zero_bytes(tmp_path: Path) -> None:
    assert not AnswerCache(0, store_listings=1000).holds_store("shop", dict)
