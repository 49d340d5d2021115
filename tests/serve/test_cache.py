"""Live answers kept whole (`pipeline.serve.cache`): a summary page is cut from the
store's kept products, and another operation's page is a slice of its combination's whole
answer, each with the bytes the page's own SQL run gives; a store past `cache_store_listings`
is answered a page at a time."""

from __future__ import annotations

import json
import threading
from collections.abc import Hashable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import duckdb
import pyarrow as pa  # type: ignore[import-untyped]  # no stubs
import pytest

from pipeline.api.params import parse_inventory_params
from pipeline.api.responses import envelope
from pipeline.serve import live
from pipeline.serve.cache import STORE_ANSWERS, Answer, AnswerCache, Kept, Rows
from pipeline.serve.routes import answer
from pipeline.transform.steps import STORE_INVENTORY
from tests.support.inputs import write_inputs
from tests.support.inventory import CATALOG, LISTINGS, L
from tests.support.runs import run_pipeline

BIG = [L("big", sku, f"{sku % 7}.50") for sku in (1000, 1001, 1002, 1010, 1020, 3000)]


class Counting:
    """A warehouse that counts the statements run on it (a page cut from kept rows runs on
    the cache's own database, not here)."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.con, self.statements, self.texts = con, 0, list[str]()

    def __call__(self) -> Counting:
        return self

    def execute(self, sql: str, params: object = None) -> duckdb.DuckDBPyConnection:
        self.statements += 1
        self.texts.append(sql)
        return self.con.execute(sql, params)

    def sql(self, sql: str, params: object = None) -> duckdb.DuckDBPyRelation:
        self.statements += 1
        self.texts.append(sql)
        return self.con.sql(sql, params=params)


@pytest.fixture(scope="module")
def con(tmp_path_factory: pytest.TempPathFactory) -> duckdb.DuckDBPyConnection:
    inputs = write_inputs(
        tmp_path_factory.mktemp("cache"),
        **CATALOG,
        listings=LISTINGS + BIG,
        # product 300's category: hidden unless includeExcludedCategories, on both channels
        excluded_categories=[
            {"storeKey": "shop", "channelId": channel, "categoryId": 3} for channel in (0, 1)
        ],
    )
    return run_pipeline(inputs)


# Slices of a combination's whole answer.
TARGETS = [
    "/v1.39.0/stores/shop/inventory/skuprices?limit=2&offset={n}",
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
    assert alone[-1].status == 404  # past the last page
    # One run for the whole answer, one for the store sizes, a lookup for each empty page's 404.
    assert asked == 2 + sum(r.status == 404 for r in alone)
    assert warehouse.statements == asked + sum(r.status == 404 for r in alone)


# A product's operations: cut from the store's kept entries.
PRODUCT = "/v1.39.0/stores/shop/inventory/products/{product}/"
PRODUCT_CUTS = ["skus?limit=1&offset={n}", "skus?offset={n}", "quantity?offset={n}"]


# Channels and listing flags, each a set of entries of its own.
PRODUCT_FLAGS = [
    "",
    "&includeCustom=false",
    "&includeGeneric=false",
    "&channelId=1",
    "&includeExcludedCategories=true",
    "&channelId=1&includeExcludedCategories=true",
]


def test_every_product_page_is_cut_from_the_stores_entries_asked_once(
    con: duckdb.DuckDBPyConnection,
) -> None:
    """A channel and the listing flags ask for the store's entries once; every product's skus
    and quantity pages, under any flags, are then cut from the right ones, with their own
    bytes."""
    cache = AnswerCache(2**20, store_listings=1000)
    warehouse = Counting(con)
    pages = [
        PRODUCT.format(product=product) + cut.format(n=n) + flags
        for n in range(3)
        for product in (100, 101, 102, 300, 999)
        for cut in PRODUCT_CUTS
        for flags in PRODUCT_FLAGS
    ]
    kept = [answer(warehouse, page, None, cache) for page in pages]  # type: ignore[arg-type]
    alone = [answer(con, page) for page in pages]
    assert [(r.status, r.body) for r in kept] == [(r.status, r.body) for r in alone]
    assert {r.status for r in alone} == {200, 404}
    lookups = sum(r.status == 404 for r in alone)
    # The store sizes, the entries of each flags, the 404s' lookups.
    assert warehouse.statements == 1 + len(PRODUCT_FLAGS) + lookups


SUMMARY = "/v1.39.0/stores/shop/inventory/products?"
# Pages of every kind one kept answer serves: orders, filters, excluded categories, paging.
CUTS = [
    "sort=name&limit=1&offset={n}",
    "sort=name desc&limit=2&offset={n}",
    "sort=price&offset={n}",
    "limit=1&offset={n}",
    "productName=o&sort=name&limit=1&offset={n}",
    "productName=LOTUS&offset={n}",
    "categoryName=magic&limit=1&offset={n}",
    "groupName=base set&offset={n}",
    "categoryId=1&sort=name&limit=1&offset={n}",
    "groupId=30&offset={n}",
    "includeExcludedCategories=true&sort=name&limit=1&offset={n}",
]


@pytest.mark.parametrize(
    "flags", ["", "&skuLimit=1", "&includeCustom=false", "&includeGeneric=false", "&channelId=1"]
)
def test_every_summary_page_is_cut_from_the_stores_products_asked_once(
    con: duckdb.DuckDBPyConnection, flags: str
) -> None:
    """A channel and the listing flags (and skuLimit) ask for the store's products once; every
    page of any order, filter or position is then cut from them, with its own bytes."""
    cache = AnswerCache(2**20, store_listings=1000)
    warehouse = Counting(con)
    pages = [SUMMARY + cut.format(n=n) + flags for cut in CUTS for n in range(4)]
    kept = [answer(warehouse, page, None, cache) for page in pages]  # type: ignore[arg-type]
    alone = [answer(con, page) for page in pages]
    assert [(r.status, r.body) for r in kept] == [(r.status, r.body) for r in alone]
    assert {r.status for r in alone} == {200, 404}
    # The store sizes once, the products once, and the lookup of the store for each empty page
    # (404 "No products were found.").
    lookups = sum(r.status == 404 for r in alone)
    assert warehouse.statements == 2 + lookups


# What a store's search adds to the summary's SQL (`searched_products`): its macros.
SEARCH_MACROS = ("search_matches", "search_filters", "name_relevance")


def test_a_get_summary_runs_none_of_the_searchs_sql(
    con: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    """A GET has no search filters: its statements on the warehouse (uncached, and the store's
    products asked for the cache) and its cut from them leave the search's macros out, which
    DuckDB would bind on every request; every page has the bytes of the search's SQL with no
    filters."""
    pages = [SUMMARY + cut.format(n=0) for cut in CUTS]
    uncached, cached = Counting(con), Counting(con)
    cache = AnswerCache(2**20, store_listings=1000)
    cut = cache.tables.cursor()  # this thread's cursor on the cache's own database
    profile = tmp_path / "profile.json"
    cut.execute(f"SET enable_profiling = 'json'; SET profiling_output = '{profile}'")
    cut_texts = []
    for page in pages:
        cached_reply = answer(cached, page, None, cache)  # type: ignore[arg-type]
        if cached_reply.status == 200:
            cut_texts.append(json.loads(profile.read_text())["query"]["sql"])
        reply = answer(uncached, page)  # type: ignore[arg-type]
        assert cached_reply.body == reply.body
        # The bytes of the search's SQL (every macro in it) with no filters.
        params = parse_inventory_params(page.partition("?")[2])
        total, results = live._rows(
            con, STORE_INVENTORY.sql, "product_json", "shop", None, params, "[]"
        )
        expected = (200, envelope(total, results)) if results else (404, reply.body)
        assert (reply.status, reply.body) == expected
    assert len(cut_texts) > len(pages) // 2
    for text in [*uncached.texts, *cached.texts, *cut_texts]:
        code = "\n".join(line.partition("--")[0] for line in text.splitlines())
        assert not [m for m in SEARCH_MACROS if m in code], text[:200]


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
        cache.put(key, key, one)
    assert cache.get("a") is one  # a is now the most recently used
    cache.put("d", "d", one)
    assert [cache.get(k) is not None for k in "abcd"] == [True, False, True, True]
    cache.put("huge", "huge", Answer(1, (b"x" * 10**6,)))  # larger than the cache: not kept
    assert cache.get("huge") is None and cache.get("d") is one


def test_a_store_asked_in_ever_new_ways_drops_its_own_oldest_answers() -> None:
    one = Answer(1, (b"x",))
    cache = AnswerCache(2**20, store_listings=1000)
    cache.put("other", "other", one)
    for n in range(STORE_ANSWERS + 5):
        cache.put("shop", ("shop", n), one)
    kept = [n for n in range(STORE_ANSWERS + 5) if cache.get(("shop", n)) is not None]
    assert kept == list(range(5, STORE_ANSWERS + 5))
    assert cache.get("other") is one


def test_no_answer_is_kept_for_a_store_the_release_does_not_have() -> None:
    cache = AnswerCache(2**20, store_listings=1000)
    assert cache.holds_store("shop", lambda: {"shop": 10})
    assert not cache.holds_store("nosuch", lambda: {"shop": 10})


def test_no_cache_with_zero_bytes(tmp_path: Path) -> None:
    assert not AnswerCache(0, store_listings=1000).holds_store("shop", dict)


def test_an_answer_larger_than_the_cache_is_asked_once_then_pages_alone(
    con: duckdb.DuckDBPyConnection,
) -> None:
    cache = AnswerCache(100, store_listings=1000)  # smaller than the shop's products
    warehouse = Counting(con)
    target = SUMMARY + "sort=name&limit=2"
    replies = [answer(warehouse, target, None, cache) for _ in range(3)]  # type: ignore[arg-type]
    assert {r.body for r in replies} == {answer(con, target).body}
    # The sizes and the products (too large: used for that request, not kept), then pages.
    assert warehouse.statements == 2 + 2


def test_requests_that_come_while_an_answer_is_asked_for_wait_for_it() -> None:
    """The first request asks; eight more, all arriving while it asks (each has looked the
    answer up and found nothing before the ask returns), wait for it rather than ask again."""
    waiters = 8
    looked = threading.Semaphore(0)

    class Watched(AnswerCache):
        def get(self, key: Hashable) -> Kept | None:
            found = super().get(key)
            if found is None and threading.current_thread() is not first:
                looked.release()
            return found

    cache = Watched(2**20, store_listings=1000)
    asked: list[int] = []

    def ask() -> Answer:
        asked.append(1)
        for _ in range(waiters):  # every waiter has found nothing: it now waits on the lock
            assert looked.acquire(timeout=30)
        return Answer(1, (b"x",))

    got: list[Kept | None] = []
    first = threading.Thread(target=lambda: got.append(cache.kept("shop", "k", ask)))
    first.start()
    with ThreadPoolExecutor(waiters) as pool:
        got += pool.map(lambda _: cache.kept("shop", "k", ask), range(waiters))
    first.join()
    assert asked == [1]
    assert len(got) == waiters + 1 and {a.results for a in got if isinstance(a, Answer)} == {
        (b"x",)
    }
    assert None not in got


def test_a_dropped_answers_table_goes_with_it() -> None:
    cache = AnswerCache(2**20, store_listings=1000)
    for n in range(STORE_ANSWERS + 3):
        cache.put("shop", n, Rows(cache.tables, pa.table({"n": [n]})))
    tables = "SELECT table_name FROM duckdb_tables() ORDER BY table_name"
    left = [name for (name,) in cache.tables.cursor().execute(tables).fetchall()]
    assert left == sorted(f"kept_{n}" for n in range(3, STORE_ANSWERS + 3))
