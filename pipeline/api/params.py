"""Request parameters of the API: their names, types, defaults and ranges, their parsing and
errors (docs/contract.md §9), and the bind parameters of the store inventory SQL."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, fields, replace
from functools import cache
from urllib.parse import unquote_plus

from pipeline.api.responses import NOT_UTF8, ApiError

INT32 = (-(2**31), 2**31 - 1)
INT64 = (-(2**63), 2**63 - 1)
MAX_LIMIT = 100
SORT_FIELDS = {"price": "price", "minprice": "price", "name": "name", "productname": "name"}
_INTEGER = re.compile(r"-?[0-9]+")


# The fields of a category (spec 2.6 and the live service's), which `sortOrder` may name.
CATEGORY_FIELDS = (
    "categoryId",
    "name",
    "modifiedOn",
    "displayName",
    "seoCategoryName",
    "categoryDescription",
    "categoryPageTitle",
    "sealedLabel",
    "nonSealedLabel",
    "conditionGuideUrl",
    "isScannable",
    "popularity",
    "isDirect",
)
# The fields of a group (`catalog/groups`), which its `sortOrder` may name.
GROUP_FIELDS = (
    "groupId",
    "name",
    "abbreviation",
    "isSupplemental",
    "publishedOn",
    "modifiedOn",
    "categoryId",
)
# The fields `sortOrder` may name, by what the page lists.
SORTABLE = {"category": CATEGORY_FIELDS, "group": GROUP_FIELDS}


@dataclass(frozen=True)
class InventoryParams:
    """Query parameters of the API's operations, with their defaults: those of
    Stores_GetStoreInventory in the spec's order, then those only other operations take
    (docs/contract.md §4, §5), then the paging. This is also the canonical order of a page's
    name."""

    categoryId: int | None = None
    categoryName: str | None = None
    groupId: int | None = None
    groupName: str | None = None
    productName: str | None = None
    skuLimit: int = 3
    sort: str = "price desc"
    includeGeneric: bool = True
    includeCustom: bool = True
    channelId: int = 0
    includeExcludedCategories: bool = False
    skuId: int | None = None
    inStockOnly: bool = True
    sortOrder: str = "name"
    sortDesc: bool = False
    getExtendedFields: bool = False
    includeSkus: bool = False
    isSupplemental: bool | None = None
    offset: int = 0
    limit: int = 10

    @property
    def sort_field(self) -> str:
        return self.sort.split(" ")[0]

    @property
    def sort_desc(self) -> bool:
        return self.sort.endswith(" desc")


DEFAULTS = InventoryParams()
INT_RANGES = {
    "categoryId": INT32,
    "groupId": INT64,
    "skuId": INT64,
    "skuLimit": INT32,
    "channelId": INT32,
    "offset": INT32,
    "limit": INT32,
}
BOOLS = (
    "includeGeneric",
    "includeCustom",
    "includeExcludedCategories",
    "inStockOnly",
    "sortDesc",
    "getExtendedFields",
    "includeSkus",
    "isSupplemental",
)
PAGING = ("offset", "limit")
# The parameters of each operation (`pipeline.api.operations` for the store's other ones).
PARAMETER_NAMES = tuple(
    f.name
    for f in fields(InventoryParams)
    if f.name
    not in (
        "skuId",
        "inStockOnly",
        "sortOrder",
        "sortDesc",
        "getExtendedFields",
        "includeSkus",
        "isSupplemental",
    )
)
CATEGORY_PARAMETERS = (*PAGING, "sortOrder", "sortDesc")


def parse_integer(text: str, bounds: tuple[int, int]) -> int | None:
    """A path id's or a parameter's integer within `bounds`, or None: plain decimal with an
    optional leading `-` and any number of leading zeros (as nginx folds them), read after
    them, so that no length reaches int()'s limit on digits."""
    if not _INTEGER.fullmatch(text):
        return None
    digits = text.removeprefix("-").lstrip("0") or "0"
    if len(digits) > 19:  # no int64 has more
        return None
    value = -int(digits) if text.startswith("-") else int(digits)
    return value if bounds[0] <= value <= bounds[1] else None


def invalid_value(name: str, value: str) -> str:
    return f"The value '{value}' is not valid for {name}."


def parse_query_string(query: str) -> dict[str, str]:
    """Parameters by lower-cased name; the first of repeated parameters wins, `+` is a space."""
    found: dict[str, str] = {}
    for part in query.split("&"):
        if not part:
            continue
        name, _, value = part.partition("=")
        try:
            name = unquote_plus(name, errors="strict").lower()
            value = unquote_plus(value, errors="strict")
        except UnicodeDecodeError:
            raise ApiError(400, [NOT_UTF8]) from None
        found.setdefault(name, value)
    return found


_SORT = re.compile(r"([A-Za-z]+)(?: +([A-Za-z]+))?")


def _parse_sort(value: str) -> str | None:
    """`<field>[ <direction>]`: surrounding white space trimmed, separated by spaces only."""
    match = _SORT.fullmatch(value.strip(" \t\r\n\f\v"))
    if not match or match.group(1).lower() not in SORT_FIELDS:
        return None
    direction = (match.group(2) or "asc").lower()
    if direction not in ("asc", "desc"):
        return None
    return f"{SORT_FIELDS[match.group(1).lower()]} {direction}"


def parse_inventory_params(
    query: str, names: Sequence[str] = PARAMETER_NAMES, sortable: str = "category"
) -> InventoryParams:
    """The request's parameters (those of `names`; others are ignored), or ApiError(400) naming
    every bad parameter; `sortOrder` names a field of what `sortable` says the page lists."""
    raw = parse_query_string(query)
    values: dict[str, object] = {}
    errors: list[str] = []
    for name in names:
        value = raw.get(name.lower())
        if value is None:
            continue
        if name in INT_RANGES:
            number = parse_integer(value, INT_RANGES[name])
            if number is None:
                errors.append(invalid_value(name, value))
                continue
            values[name] = number
        elif name in BOOLS:
            if value.lower() not in ("true", "false"):
                errors.append(invalid_value(name, value))
                continue
            values[name] = value.lower() == "true"
        elif name == "sort":
            sort = _parse_sort(value)
            if sort is None:
                errors.append(
                    invalid_value(name, value) + " Use price, minprice, name or "
                    "productname, optionally followed by asc or desc."
                )
                continue
            values[name] = sort
        elif name == "sortOrder" and value != "":  # empty: the default, as an empty filter
            field = {f.lower(): f for f in SORTABLE[sortable]}.get(value.lower())
            if field is None:
                errors.append(
                    invalid_value(name, value) + f" Use a field of the {sortable}: "
                    f"{', '.join(SORTABLE[sortable])}."
                )
                continue
            values[name] = field
        elif value != "":  # an empty string filter is no filter
            values[name] = value
    offset, limit, sku_limit = (values.get(n) for n in ("offset", "limit", "skuLimit"))
    if isinstance(offset, int) and offset < 0:
        errors.append("offset must be greater than or equal to 0.")
    if isinstance(limit, int) and not 1 <= limit <= MAX_LIMIT:
        errors.append(f"limit must be between 1 and {MAX_LIMIT}.")
    if isinstance(sku_limit, int) and sku_limit < 0:
        errors.append("skuLimit must be greater than or equal to 0.")
    if errors:
        raise ApiError(400, errors)
    return replace(DEFAULTS, **values)  # type: ignore[arg-type]


def parse_after_path(
    path_errors: list[str], query: str, names: Sequence[str], sortable: str = "category"
) -> InventoryParams:
    """The query's parameters of an operation whose path segments were parsed first:
    ApiError(400) naming every bad one, the path's first."""
    try:
        params = parse_inventory_params(query, names, sortable)
    except ApiError as exc:
        raise ApiError(exc.status, path_errors + exc.messages) from None
    if path_errors:
        raise ApiError(400, path_errors)
    return params


def bind_params(
    params: InventoryParams, store_keys: list[str] | None, product_id: int | None = None
) -> dict[str, object]:
    """Every bind parameter the store inventory SQL files may read, for a request (store_keys
    None: every store); `used` keeps those a file reads."""
    return {
        "store_keys": store_keys,
        "channel_id": params.channelId,
        "product_id": product_id,
        "include_generic": params.includeGeneric,
        "include_custom": params.includeCustom,
        "include_excluded_categories": params.includeExcludedCategories,
        "in_stock_only": params.inStockOnly,
        "category_id": params.categoryId,
        "category_name": params.categoryName,
        "group_id": params.groupId,
        "group_name": params.groupName,
        "product_name": params.productName,
        "sku_id": params.skuId,
        "sku_limit": params.skuLimit,
        "sort_field": params.sort_field,
        "sort_desc": params.sort_desc,
        "get_extended_fields": params.getExtendedFields,
        "include_skus": params.includeSkus,
        "is_supplemental": params.isSupplemental,
        "sort_order": params.sortOrder,
        "order_desc": params.sortDesc,
        "search_filters": "[]",  # a search's filters (`api.search`), JSON: none on a GET
        **paging_params(params),
    }


def used(sql: str, values: dict[str, object]) -> dict[str, object]:
    """The bind parameters `sql` names outside its comments (DuckDB refuses one it does not)."""
    return {k: v for k, v in values.items() if k in _names(sql)}


@cache
def _names(sql: str) -> frozenset[str]:
    return frozenset(re.findall(r"\$([a-z_]+)", re.sub(r"--[^\n]*", "", sql)))


def paging_params(params: InventoryParams) -> dict[str, object]:
    """The page's bind parameters ($first_position, $last_position: 1-based, inclusive)."""
    return {"first_position": params.offset + 1, "last_position": params.offset + params.limit}


def category_params(params: InventoryParams) -> dict[str, object]:
    """Bind parameters of the category listing SQL for a request."""
    return {"sort_field": params.sortOrder, "sort_desc": params.sortDesc, **paging_params(params)}
