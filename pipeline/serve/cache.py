"""Whole answers kept in memory, so that a page is a slice (issue 22).

A live answer's cost on DuckDB is mostly fixed: parsing, binding and optimising the operation's
SQL, and starting its pipelines, about 15 ms of CPU whatever the store's size (docs/
benchmarks.md). For a store of a few thousand listings the whole answer of a combination (every
page) costs about what one page does, so the server asks the same SQL for every position at
once and keeps the result: the other pages of that combination, and the same page again, are
then a slice of it, with the same bytes (the SQL is still the only definition: a page is its
rows from `first_position` to `last_position`, which is what a slice of its whole answer is).

The cache belongs to one published release (`server.Published`): a new build starts empty. It
holds at most `serve.cache_mb` of answers and drops the least recently used first. A store with
more listings than `serve.cache_store_listings` is answered a page at a time, never whole (its
whole answer would cost far more than a page).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass, replace

from pipeline.api.params import InventoryParams

# The last position of a whole answer: past any answer's length.
WHOLE = 2**62


@dataclass(frozen=True)
class Answer:
    """A combination's answer, every position: its total and its result objects in order."""

    total: int
    results: tuple[bytes, ...]

    @property
    def size(self) -> int:
        return sum(map(len, self.results)) + 64 * (len(self.results) + 1)

    def page(self, params: InventoryParams) -> tuple[bytes, ...]:
        return self.results[params.offset : params.offset + params.limit]


def whole(params: InventoryParams) -> InventoryParams:
    """The parameters of the combination's whole answer: the same but for the paging."""
    return replace(params, offset=0, limit=WHOLE)


class AnswerCache:
    """Answers by key, at most `max_bytes` of them, the least recently used dropped first."""

    def __init__(self, max_bytes: int, store_listings: int) -> None:
        self.max_bytes, self.store_listings = max_bytes, store_listings
        self._answers: OrderedDict[Hashable, Answer] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self._sizes: dict[str, int] | None = None

    def holds_store(self, store_key: str, sizes: Callable[[], dict[str, int]]) -> bool:
        """Whether the store's answers are kept whole: it has at most `store_listings`
        listings (`sizes`: listings by store, read once per release)."""
        if self.max_bytes <= 0:
            return False
        if self._sizes is None:
            loaded = sizes()
            with self._lock:
                self._sizes = loaded
        return self._sizes.get(store_key, 0) <= self.store_listings

    def get(self, key: Hashable) -> Answer | None:
        with self._lock:
            answer = self._answers.get(key)
            if answer is not None:
                self._answers.move_to_end(key)
            return answer

    def put(self, key: Hashable, answer: Answer) -> None:
        size = answer.size
        if size > self.max_bytes:
            return
        with self._lock:
            if key in self._answers:
                return
            self._answers[key] = answer
            self._bytes += size
            while self._bytes > self.max_bytes:
                _, dropped = self._answers.popitem(last=False)
                self._bytes -= dropped.size
