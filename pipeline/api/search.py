"""The search operations (docs/contract.md §12): what describes them, their query parameters,
and the body `{sort, limit, offset, filters, includeAggregates}` parsed with its 400 messages.
Their paths are POST paths (`api.urls.POST_PATHS`); the category's manifest is a catalog
operation (`api.catalog`)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Literal

from pipeline.api.params import INT32, MAX_LIMIT
from pipeline.api.urls import POST_PATHS, STORES_DIR, VERSION

PostName = Literal["catalog_search", "store_search"]


@dataclass(frozen=True)
class PostOperation:
    """A search, answered to a `POST` (with a body) live by `pipeline serve`; its path's
    regular expression is `api.urls.POST_PATHS[name]`."""

    name: PostName
    operation_id: str
    summary: str
    path: str  # under /v1.39.0/, `{name}` a path segment, as the official document writes it
    description: str
    parameters: tuple[str, ...] = ()  # the query parameters it reads, the official order


# The searches, by their POST path's name (`api.urls.POST_PATHS`): the OpenAPI document and the
# help page describe them from here.
POST_OPERATIONS: tuple[PostOperation, ...] = (
    PostOperation(
        "catalog_search",
        "Catalog_SearchCategory",
        "Search Category Products",
        "catalog/categories/{categoryId}/search",
        "The ids of the category's products that match every filter of the body, in its sort "
        "(lowest market price first or last, products with none last), paged by its offset "
        "and limit. An unknown category: 404 No categories were found.",
    ),
    PostOperation(
        "store_search",
        "Stores_ProductSearchByCategory",
        "List Product Summary By Category",
        f"{STORES_DIR.removeprefix(VERSION + '/')}/{{storeKey}}/inventory/categories/{{categoryId}}"
        "/search",
        "The store's inventory summary of its products in the category that match the body's "
        "filters, in its sort (MinPrice on the store's lowest price), paged by its offset and "
        "limit: the summary's entries and bytes. An unknown category matches nothing.",
        ("skuLimit", "includeCustom", "includeGeneric", "channelId", "includeExcludedCategories"),
    ),
)
assert {op.name for op in POST_OPERATIONS} <= set(POST_PATHS), "each search has its POST path"

# The body's messages (400).
BODY_NOT_VALID = "The request body is not valid."
BODY_KEYS = ("sort", "limit", "offset", "filters")  # the order their errors are reported in
FILTER_NAMES = ("ProductName", "SetName", "Number", "Rarity")  # the manifest's, in its order
# A body's `sort` (case-insensitive, spaces folded) -> the order the SQL files name.
SORTS = {
    "productname asc": "productname asc",
    "minprice desc": "minprice desc",
    "minprice asc": "minprice asc",
    "relevance": "relevance",
}
DEFAULT_SORT = "relevance"
# A store's search: the body's sort as the summary's `sort` (`params.InventoryParams.sort`).
SUMMARY_SORTS = {
    "productname asc": "name asc",
    "minprice desc": "price desc",
    "minprice asc": "price asc",
    "relevance": "relevance asc",
}
_WHITE = " \t\r\n\f\v"  # what a sort is trimmed of, as §4's sort


def invalid_key(key: str) -> str:
    return f"The value given for the parameter '{key}' is not valid."


@dataclass(frozen=True)
class SearchBody:
    """A body's values, checked: the sort as SORTS names it, the page, and each filter as
    (its name lower-cased, its values as given)."""

    sort: str = DEFAULT_SORT
    limit: int = 10
    offset: int = 0
    filters: tuple[tuple[str, tuple[str, ...]], ...] = field(default=())

    def filters_json(self) -> str:
        """The filters as the SQL's `search_filters` reads them."""
        listed = [{"name": name, "values": list(values)} for name, values in self.filters]
        return json.dumps(listed, ensure_ascii=False)


class _Fraction:
    """A JSON number with a fraction or an exponent: never an integer of the body."""


class _Huge:
    """A JSON integer too long to be any integer of the body (read without int()'s cost)."""


def _integer(text: str) -> int | _Huge:
    return int(text) if len(text) <= 20 else _Huge()


def _no_constant(name: str) -> object:
    raise ValueError(f"{name} is not JSON")


def _load(body: bytes) -> object:
    """The body as JSON (strict UTF-8, no NaN or Infinity), or ValueError."""
    value = json.loads(
        body.decode("utf-8"),
        parse_float=lambda _: _Fraction(),
        parse_int=_integer,
        parse_constant=_no_constant,
    )
    json.dumps(value, ensure_ascii=False, default=lambda _: None).encode("utf-8")  # surrogates
    return value


def _is_int(value: object, low: int, high: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def _filters(value: object) -> tuple[tuple[str, tuple[str, ...]], ...] | None:
    """The filters as (lower-cased name, values), or None when they are not valid."""
    if not isinstance(value, list):
        return None
    names = {name.lower(): name.lower() for name in FILTER_NAMES}
    found = []
    for item in value:
        if not isinstance(item, dict):
            return None
        name, values = item.get("name"), item.get("values")
        values = [] if values is None else values
        if not isinstance(name, str) or name.lower() not in names:
            return None
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            return None
        found.append((names[name.lower()], tuple(values)))
    return tuple(found)


def parse_body(body: bytes) -> tuple[SearchBody | None, list[str]]:
    """The body's values, or None and the messages of what is not valid, in BODY_KEYS order."""
    try:
        loaded = _load(body)
    except (ValueError, UnicodeError, RecursionError):
        return None, [BODY_NOT_VALID]
    if not isinstance(loaded, dict):
        return None, [BODY_NOT_VALID]
    values: dict[str, object] = {}
    errors = []
    sort = loaded.get("sort")
    if sort is not None:
        folded = re.sub(" +", " ", sort.strip(_WHITE)).lower() if isinstance(sort, str) else ""
        if folded in SORTS:
            values["sort"] = SORTS[folded]
        else:
            errors.append(invalid_key("sort"))
    for key, low, high in (("limit", 1, MAX_LIMIT), ("offset", 0, INT32[1])):
        given = loaded.get(key)
        if given is None:
            continue
        if _is_int(given, low, high):
            values[key] = given
        else:
            errors.append(invalid_key(key))
    filters = loaded.get("filters")
    if filters is not None:
        checked = _filters(filters)
        if checked is None:
            errors.append(invalid_key("filters"))
        else:
            values["filters"] = checked
    if errors:
        return None, errors
    return SearchBody(**values), []  # type: ignore[arg-type]
