"""The API being reproduced: request parameters, their parsing and errors, response bytes, and
the mapping from a request to a published file (DESIGN §3, spec §4.1).

The store inventory summary itself is one parameterised SQL file
(`sql/api/store_inventory_products.sql`); `store_inventory` runs it for one request, and the
exporter runs it once for every store and channel. Both produce the page bytes with `envelope`
(the exporter with its polars form, `envelope_expr`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields, replace
from functools import cache
from pathlib import Path, PurePosixPath
from urllib.parse import quote, unquote, unquote_plus

import duckdb
import orjson
import polars as pl

from pipeline.db import count_rows, scalar
from pipeline.steps import STORE_INVENTORY

VERSION = "v1.39.0"
INT32 = (-(2**31), 2**31 - 1)
INT64 = (-(2**63), 2**63 - 1)
MAX_LIMIT = 100
MAX_TARGET = 8192  # longer request targets get 414
SORT_FIELDS = {"price": "price", "minprice": "price", "name": "name", "productname": "name"}
_INTEGER = re.compile(r"-?[0-9]+")

NO_STORES = "No stores were found."
NO_PRODUCTS = "No products were found."
NO_CATEGORIES = "No categories were found."
URL_NOT_FOUND = "URL not found."


@dataclass(frozen=True)
class Response:
    status: int
    body: bytes
    content_type: str = "application/json; charset=utf-8"


class ApiError(Exception):
    def __init__(self, status: int, messages: Sequence[str]) -> None:
        super().__init__("; ".join(messages))
        self.status = status
        self.messages = list(messages)

    def response(self) -> Response:
        return Response(self.status, error_body(self.messages))


def error_body(messages: Iterable[str]) -> bytes:
    return b'{"success":false,"errors":' + orjson.dumps(list(messages)) + b',"results":[]}'


_ENVELOPE = ('{"totalItems":', ',"success":true,"errors":[],"results":[', "]}")


def envelope(total_items: int, results: Iterable[str | bytes]) -> bytes:
    """The paged envelope (spec 2.1) around ready-made result objects, compact, no newline."""
    items = [r.encode() if isinstance(r, str) else r for r in results]
    head, middle, tail = (part.encode() for part in _ENVELOPE)
    return head + b"%d" % total_items + middle + b",".join(items) + tail


def envelope_expr(total_items: pl.Expr, results: pl.Expr) -> pl.Expr:
    """`envelope` as a polars expression: `results` is the page's result objects joined by
    commas."""
    head, middle, tail = _ENVELOPE
    return pl.concat_str(
        pl.lit(head), total_items.cast(pl.String), pl.lit(middle), results, pl.lit(tail)
    )


@dataclass(frozen=True)
class InventoryParams:
    """Query parameters of Stores_GetStoreInventory, in the spec's order, with its defaults."""

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
    offset: int = 0
    limit: int = 10

    @property
    def sort_field(self) -> str:
        return self.sort.split(" ")[0]

    @property
    def sort_desc(self) -> bool:
        return self.sort.endswith(" desc")


DEFAULTS = InventoryParams()
_INT_RANGES = {
    "categoryId": INT32,
    "groupId": INT64,
    "skuLimit": INT32,
    "channelId": INT32,
    "offset": INT32,
    "limit": INT32,
}
_BOOLS = ("includeGeneric", "includeCustom", "includeExcludedCategories")
_STRINGS = ("categoryName", "groupName", "productName")
PARAMETER_NAMES = tuple(f.name for f in fields(InventoryParams))


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
            raise ApiError(
                400, ["The query string is not valid UTF-8 after percent-decoding."]
            ) from None
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


def parse_inventory_params(query: str, names: Sequence[str] = PARAMETER_NAMES) -> InventoryParams:
    """The request's parameters (those of `names`; others are ignored), or ApiError(400) naming
    every bad parameter."""
    raw = parse_query_string(query)
    values: dict[str, object] = {}
    errors: list[str] = []
    for name in names:
        value = raw.get(name.lower())
        if value is None:
            continue
        if name in _INT_RANGES:
            low, high = _INT_RANGES[name]
            digits = value.lstrip("-").lstrip("0")
            if not _INTEGER.fullmatch(value) or len(digits) > 19 or not low <= int(value) <= high:
                errors.append(f"The value '{value}' is not valid for {name}.")
                continue
            values[name] = int(value)
        elif name in _BOOLS:
            if value.lower() not in ("true", "false"):
                errors.append(f"The value '{value}' is not valid for {name}.")
                continue
            values[name] = value.lower() == "true"
        elif name == "sort":
            sort = _parse_sort(value)
            if sort is None:
                errors.append(
                    f"The value '{value}' is not valid for sort. Use price, minprice, name or "
                    "productname, optionally followed by asc or desc."
                )
                continue
            values[name] = sort
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


# ---------------------------------------------------------------------------------------------
# Request -> published file. Every URL of the API has one canonical form: the parameters whose
# value differs from the default, in the spec's order, with canonical values (integers in plain
# decimal, booleans true/false, sort as "<field> <direction>", name filters lower-cased),
# percent-encoded. The page of a store inventory request is
#   v1.39.0/stores/{storeKey lower-case}/inventory/products/{canonical query or "index"}.json
# e.g. ?offset=10&channelId=1 -> .../products/channelId=1&offset=10.json.
# ---------------------------------------------------------------------------------------------


def _canonical_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value).lower() if isinstance(value, str) else str(value)


_CANONICAL_ORDER = tuple((f.name, f.default) for f in fields(InventoryParams))


def canonical_query(params: InventoryParams, *, paging: bool = True) -> str:
    """The canonical query string (without offset and limit when not `paging`)."""
    pairs = []
    for name, default in _CANONICAL_ORDER:
        if not paging and name in ("offset", "limit"):
            continue
        value = getattr(params, name)
        if value != default:
            pairs.append(f"{name}={quote(_canonical_value(value), safe='')}")
    return "&".join(pairs)


def inventory_page_path(store_key: str, params: InventoryParams) -> PurePosixPath:
    name = canonical_query(params) or "index"
    return PurePosixPath(
        VERSION, "stores", store_key.lower(), "inventory", "products", f"{name}.json"
    )


def page_names(query: pl.Expr, page: pl.Expr, limit: int) -> pl.Expr:
    """`inventory_page_path`'s file name, as a polars expression, for page `page` (0, 1, …) of
    requests whose canonical query without offset and limit is `query`: offset and limit come
    last in the canonical order, so the name is the query with the paging appended."""
    size = "" if limit == DEFAULTS.limit else f"limit={limit}"
    paging = [
        pl.lit("offset="),
        (page * limit).cast(pl.String),
        *([pl.lit("&" + size)] * bool(size)),
    ]
    first = (
        query if not size else pl.when(query == "").then(pl.lit(size)).otherwise(query + "&" + size)
    )
    later = (
        pl.when(query == "")
        .then(pl.concat_str(paging))
        .otherwise(pl.concat_str([query, pl.lit("&"), *paging]))
    )
    name = pl.when(page == 0).then(pl.when(first == "").then(pl.lit("index")).otherwise(first))
    return name.otherwise(later) + ".json"


_MARK = INT64[0]  # stands for the value in a query template; -2**63 is no id a store has


@cache
def filtered_query(channel: int, parameter: str) -> tuple[str, str]:
    """The canonical query (without offset and limit) of a channel's default request filtered
    by one integer parameter (categoryId or groupId), as the text before and after the value,
    so that the exporter names a page per group without building its parameters."""
    params = {
        "categoryId": InventoryParams(channelId=channel, categoryId=_MARK),
        "groupId": InventoryParams(channelId=channel, groupId=_MARK),
    }[parameter]
    query = canonical_query(params, paging=False)
    before, mark, after = query.partition(str(_MARK))
    assert mark and str(_MARK) not in after, query
    return before, after


def categories_page_path(offset: int, limit: int = 10) -> PurePosixPath:
    pairs = [f"{n}={v}" for n, v, d in (("offset", offset, 0), ("limit", limit, 10)) if v != d]
    return PurePosixPath(VERSION, "catalog", "categories", f"{'&'.join(pairs) or 'index'}.json")


# ---------------------------------------------------------------------------------------------
# Live answers from the warehouse: the same SQL and bytes the exporter uses.
# ---------------------------------------------------------------------------------------------


def query_params(params: InventoryParams, *, store_key: str | None) -> dict[str, object]:
    """Bind parameters of the store inventory SQL for a request (store_key None: all stores)."""
    return {
        "store_keys": None if store_key is None else [store_key],
        "channel_id": params.channelId,
        "include_generic": params.includeGeneric,
        "include_custom": params.includeCustom,
        "include_excluded_categories": params.includeExcludedCategories,
        "category_id": params.categoryId,
        "category_name": params.categoryName,
        "group_id": params.groupId,
        "group_name": params.groupName,
        "product_name": params.productName,
        "sku_limit": params.skuLimit,
        "sort_field": params.sort_field,
        "sort_desc": params.sort_desc,
        "first_position": params.offset + 1,
        "last_position": params.offset + params.limit,
    }


def store_exists(con: duckdb.DuckDBPyConnection, store_key: str) -> bool:
    return bool(scalar(con, "SELECT count(*) FROM marts.store WHERE store_key = ?", [store_key]))


def store_inventory(
    con: duckdb.DuckDBPyConnection, store_key: str, params: InventoryParams
) -> bytes:
    """The page of GET /v1.39.0/stores/{storeKey}/inventory/products, or ApiError(404)."""
    key = store_key.lower()
    if not store_exists(con, key):
        raise ApiError(404, [NO_STORES])
    result = con.execute(STORE_INVENTORY.sql, query_params(params, store_key=key))
    names = [d[0] for d in result.description]
    total, product = names.index("total_items"), names.index("product_json")
    rows = result.fetchall()
    if not rows:
        raise ApiError(404, [NO_PRODUCTS])
    return envelope(rows[0][total], (r[product] for r in rows))


def categories_page(con: duckdb.DuckDBPyConnection, offset: int, limit: int) -> bytes:
    total = count_rows(con, "export.category")
    rows = con.execute(
        "SELECT category_json FROM export.category ORDER BY category_id LIMIT ? OFFSET ?",
        [limit, offset],
    ).fetchall()
    if not rows:
        raise ApiError(404, [NO_CATEGORIES])
    return envelope(total, (r[0] for r in rows))


HELP_PATH = f"/{VERSION}/help/index"
OPENAPI_PATH = f"/{VERSION}/help/openapi.json"
_INVENTORY_PATH = re.compile(rf"/{re.escape(VERSION)}/stores/([^/]+)/inventory/products")
_STORE_KEY = re.compile(r"[A-Za-z0-9_-]{1,64}")


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except OSError:  # e.g. a name longer than the file system allows: never materialised
        return False


def normalize_path(path: str) -> str:
    """A decoded path as nginx sees it: repeated slashes merged, `.` and `..` segments resolved;
    a `..` above the root is a malformed request."""
    segments: list[str] = []
    for segment in path.split("/")[1:]:
        if segment == "..":
            if not segments:
                raise ApiError(400, ["The request is malformed."])
            segments.pop()
        elif segment not in ("", "."):
            segments.append(segment)
    trailing = "/" if path.endswith("/") and segments else ""
    return "/" + "/".join(segments) + trailing


def answer(con: duckdb.DuckDBPyConnection, target: str, site: Path | None = None) -> Response:
    """The API's response to `GET target` (a path with its query string, path not yet
    percent-decoded). With `site`, a materialised page is read from its file; anything else is
    computed from the warehouse, with the same bytes."""
    path, _, query = target.partition("?")
    try:
        if len(target) > MAX_TARGET:
            raise ApiError(414, ["The request URL is too long."])
        path = normalize_path(unquote(path))
        if len(path) > 1:
            path = path.rstrip("/")  # a trailing slash names the same resource
        match = _INVENTORY_PATH.fullmatch(path)
        if match:
            params = parse_inventory_params(query)  # 400s are decided before the store lookup
            key = match.group(1)
            if not _STORE_KEY.fullmatch(key):
                raise ApiError(404, [NO_STORES])
            page = site / inventory_page_path(key, params) if site else None
            if page is not None and _is_file(page):
                return Response(200, page.read_bytes())
            return Response(200, store_inventory(con, key, params))
        if path == f"/{VERSION}/catalog/categories":
            params = parse_inventory_params(query, ("offset", "limit"))
            page = site / categories_page_path(params.offset, params.limit) if site else None
            if page is not None and page.is_file():
                return Response(200, page.read_bytes())
            return Response(200, categories_page(con, params.offset, params.limit))
        if path == HELP_PATH:
            from pipeline.models import help_page

            return Response(200, help_page().encode(), "text/html; charset=utf-8")
        if path == OPENAPI_PATH:
            from pipeline.models import openapi_document

            return Response(200, orjson.dumps(openapi_document(), option=orjson.OPT_INDENT_2))
        raise ApiError(404, [URL_NOT_FOUND])
    except ApiError as exc:
        return exc.response()
