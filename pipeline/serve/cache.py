"""Whole answers kept in memory per release, so that a page costs a cut, not a query.
(docs/serving.md, "The live answers' cache")"""

from __future__ import annotations

import functools
import itertools
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass, replace
from typing import Protocol, TypeVar, cast

import duckdb
import pyarrow as pa  # type: ignore[import-untyped]  # no stubs

from pipeline.api.params import InventoryParams
from pipeline.db import MACROS

# The last position of a whole answer: past any answer's length.
WHOLE = 2**62
# Answers kept at once for one store (channels, listing flags, skuLimit values, combinations):
# a client that asks one store in ever new ways drops that store's oldest, not the others'.
STORE_ANSWERS = 16
# What a kept answer costs beyond its bytes (Python and Arrow objects), counted against the
# bound so that many empty answers cannot grow past it.
OVERHEAD = 4096


class Kept(Protocol):
    @property
    def size(self) -> int: ...


K = TypeVar("K", bound=Kept)


@dataclass(frozen=True)
class Answer:
    """A combination's answer, every position: its total and its result objects in order."""

    total: int
    results: tuple[bytes, ...]

    @property
    def size(self) -> int:
        return sum(map(len, self.results)) + 64 * len(self.results) + OVERHEAD

    def page(self, params: InventoryParams) -> tuple[bytes, ...]:
        return self.results[params.offset : params.offset + params.limit]


class Rows:
    """Rows a page is cut from (a store's summary products, or its entries): a table of the
    cache's own in-memory DuckDB database, dropped when the last reference to this object
    goes (the cache dropped it and no request still cuts from it)."""

    def __init__(self, tables: Tables, rows: pa.Table) -> None:
        self.table, self.bytes = tables.create(rows), int(rows.nbytes)
        weakref.finalize(self, tables.drop, self.table)

    @property
    def size(self) -> int:
        return self.bytes + OVERHEAD


class Tables:
    """The cache's in-memory DuckDB database: the kept rows as tables of its own, so that a cut
    is a query over a table (no registration of an Arrow table, no Arrow scan: about 1 ms less
    a request), and a cursor a thread on it, with the shared macros."""

    def __init__(self) -> None:
        self._database = duckdb.connect(config={"threads": 1})
        self._local = threading.local()
        self._names = itertools.count()

    def cursor(self) -> duckdb.DuckDBPyConnection:
        cursor = cast(duckdb.DuckDBPyConnection | None, getattr(self._local, "cursor", None))
        if cursor is None:
            cursor = self._database.cursor()
            cursor.execute(MACROS)  # temporary macros belong to one connection
            self._local.cursor = cursor
        return cursor

    def create(self, rows: pa.Table) -> str:
        name = f"kept_{next(self._names)}"
        cursor = self._database.cursor()
        try:
            cursor.register("kept_rows", rows)
            cursor.execute(f"CREATE TABLE {name} AS SELECT * FROM kept_rows")
        finally:
            cursor.close()
        return name

    def drop(self, name: str) -> None:
        cursor = self._database.cursor()
        try:
            cursor.execute(f"DROP TABLE IF EXISTS {name}")
        finally:
            cursor.close()


def whole(params: InventoryParams) -> InventoryParams:
    """The parameters of the combination's whole answer: the same but for the paging."""
    return replace(params, offset=0, limit=WHOLE)


class AnswerCache:
    """Answers by store and key, at most `max_bytes` of them and `STORE_ANSWERS` of a store,
    the least recently used dropped first."""

    def __init__(self, max_bytes: int, store_listings: int) -> None:
        self.max_bytes, self.store_listings = max_bytes, store_listings
        self._answers: OrderedDict[Hashable, tuple[str, Kept]] = OrderedDict()
        self._of_store: dict[str, OrderedDict[Hashable, None]] = {}
        self._bytes = 0
        self._lock = threading.Lock()
        self._asking: dict[Hashable, threading.Lock] = {}
        self._too_large: set[str] = set()
        self._sizes: dict[str, int] | None = None

    @functools.cached_property
    def tables(self) -> Tables:
        """The kept rows' database, made on the first rows kept."""
        return Tables()

    def holds_store(self, store_key: str, sizes: Callable[[], dict[str, int]]) -> bool:
        """Whether the store's answers are kept whole: a store of the release (not a key never
        seen) with at most `store_listings` listings (`sizes`: listings by store, read once per
        release), none of whose answers was found larger than the whole cache."""
        if self.max_bytes <= 0 or store_key in self._too_large:
            return False
        if self._sizes is None:
            loaded = sizes()
            with self._lock:
                self._sizes = loaded
        return self._sizes.get(store_key, self.store_listings + 1) <= self.store_listings

    def kept(self, store_key: str, key: Hashable, ask: Callable[[], K]) -> K | None:
        """The store's answer kept under `key`, asked for (`ask`) once and kept. None when the
        store has an answer larger than the whole cache (the caller answers a page alone from
        then on; the request that found it so gets it once). Requests that come while it is
        asked for wait for it."""
        found = self.get(key)
        if found is None:
            with self._lock:
                if store_key in self._too_large:
                    return None
                asking = self._asking.setdefault(key, threading.Lock())
            try:
                with asking:
                    found = self.get(key)
                    if found is None and store_key in self._too_large:  # found so meanwhile
                        return None
                    if found is None:
                        found = ask()
                        if not self.put(store_key, key, found):
                            with self._lock:
                                self._too_large.add(store_key)
            finally:
                with self._lock:
                    self._asking.pop(key, None)
        return cast(K, found)

    def get(self, key: Hashable) -> Kept | None:
        with self._lock:
            found = self._answers.get(key)
            if found is None:
                return None
            self._answers.move_to_end(key)
            self._of_store[found[0]].move_to_end(key)
            return found[1]

    def put(self, store_key: str, key: Hashable, answer: Kept) -> bool:
        """Keep the store's `answer` (dropping the least recently used past the bounds); False
        when it is larger than the whole cache, and not kept."""
        size = answer.size
        if size > self.max_bytes:
            return False
        with self._lock:
            if key in self._answers:
                return True
            of_store = self._of_store.setdefault(store_key, OrderedDict())
            if len(of_store) >= STORE_ANSWERS:
                self._drop(next(iter(of_store)))
            self._answers[key] = (store_key, answer)
            of_store[key] = None
            self._bytes += size
            while self._bytes > self.max_bytes:
                self._drop(next(iter(self._answers)))
        return True

    def _drop(self, key: Hashable) -> None:
        store_key, answer = self._answers.pop(key)
        del self._of_store[store_key][key]
        self._bytes -= answer.size
