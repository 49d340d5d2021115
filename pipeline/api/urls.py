"""Request -> published file: the one mapping the exporter names files by, the live server
reads them by, and the nginx configuration performs. A page's name is the canonical query
(non-default parameters in the spec's order, canonical values, percent-encoded) or `index`."""

from __future__ import annotations

import re
from dataclasses import fields
from functools import cache
from pathlib import PurePosixPath
from urllib.parse import quote

import polars as pl

from pipeline.api.params import DEFAULTS, INT64, InventoryParams
from pipeline.contract import STORE_KEY_PATTERN

VERSION = "v1.39.0"
MAX_TARGET = 8192  # longer request targets get 414

STORES_DIR = f"{VERSION}/stores"  # a store's pages: STORES_DIR/<key>/inventory/products/
PRODUCTS_DIR = "inventory/products"  # a store's inventory pages, under its folder
CATEGORIES_DIR = f"{VERSION}/catalog/categories"
# The paths of the operations (the site's folders, as URLs) and of the help.
INVENTORY_PATH = re.compile(rf"/{re.escape(STORES_DIR)}/([^/]+)/{re.escape(PRODUCTS_DIR)}")
CATEGORIES_PATH = f"/{CATEGORIES_DIR}"
HELP_PATH = f"/{VERSION}/help/index"
OPENAPI_PATH = f"/{VERSION}/help/openapi.json"
HELP_FILE = PurePosixPath(VERSION, "help", "index.html")
OPENAPI_FILE = PurePosixPath(VERSION, "help", "openapi.json")
# The bulk files (docs/serving.md, "Bulk files"): BULK_DIR/index.json, BULK_DIR/<categoryId>.parquet
# and BULK_DIR/<categoryId>/<groupId>.csv; their URL is their site path with a leading slash.
BULK_DIR = f"{VERSION}/bulk"
BULK_INDEX = PurePosixPath(BULK_DIR, "index.json")
BULK_NAMES = r"index\.json|-?[0-9]+\.parquet|-?[0-9]+/-?[0-9]+\.csv"  # under BULK_DIR
BULK_PATH = re.compile(rf"/({re.escape(BULK_DIR)}/(?:{BULK_NAMES}))")
STORE_KEY = re.compile(STORE_KEY_PATTERN)
# The paths that take a POST, by the name of what answers them: each a regular expression of
# the normalised path (no trailing slash) that nginx's PCRE reads alike. The generated nginx
# passes a POST to one of them to `pipeline serve` (`export/nginx/posts.py`), its body at most
# `serve.max_request_body_size` bytes (else 413), and `pipeline serve` answers it by name
# (`serve/posts.py`); a POST to any other path is 405, and another method to these is answered
# as on any path. The token endpoint is where the live service has it, and under the version,
# where a client whose base URL carries the version asks for it (docs/contract.md §10).
POST_PATHS = {
    "token": rf"/(?:{re.escape(VERSION)}/)?token",
    # The searches (docs/contract.md §12, `api.search`): the groups are the path's segments.
    "catalog_search": rf"/{re.escape(VERSION)}/catalog/categories/([^/]+)/search",
    "store_search": rf"/{re.escape(STORES_DIR)}/([^/]+)/inventory/categories/([^/]+)/search",
}
# A site path in a store's folder, `STORES_DIR/<key>/...`: the key is its group.
STORE_PAGE = re.compile(rf"{re.escape(STORES_DIR)}/([^/]+)/")


def store_of(path: str) -> str | None:
    """The store key of a site path in a store's folder, None for any other path."""
    found = STORE_PAGE.match(path)
    return found.group(1) if found else None


def store_column(paths: pl.Expr) -> pl.Expr:
    """`store_of` of each path of a column."""
    return paths.str.extract(f"^{STORE_PAGE.pattern}", 1)


# A catalog file's unit (docs/serving.md, "The bucket's layout"): a group's price pages and
# bulk CSV are `groups/<groupId>`, a category's folder of pages and its Parquet file
# `categories/<categoryId>`, the bulk files' index `bulk/index` (it moves with any of them); in
# a bucket each is a version of its own. Any other file of no store (help, the category
# listing, the conditions) is of no unit: common.
CATALOG_UNIT = re.compile(
    rf"{re.escape(VERSION)}/(?:pricing/group/(?P<g>[^/]+)/"
    rf"|bulk/-?[0-9]+/(?P<cg>-?[0-9]+)\.csv$"
    rf"|catalog/categories/(?P<c>[^/]+)/|bulk/(?P<cb>-?[0-9]+)\.parquet$|bulk/(?P<i>index)\.json$)"
)
BULK_INDEX_UNIT = "bulk/index"


def catalog_unit(path: str) -> str | None:
    """The unit (`groups/<id>`, `categories/<id>`, `bulk/index`) of a site path; None for any
    other path."""
    found = CATALOG_UNIT.match(path)
    if found is None:
        return None
    if found["i"]:
        return BULK_INDEX_UNIT
    group = found["g"] or found["cg"]
    return f"groups/{group}" if group else f"categories/{found['c'] or found['cb']}"


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
    return PurePosixPath(STORES_DIR, store_key.lower(), PRODUCTS_DIR, f"{name}.json")


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


def bulk_parquet_path(category_id: int) -> PurePosixPath:
    return PurePosixPath(BULK_DIR, f"{category_id}.parquet")


def bulk_csv_path(category_id: int, group_id: int) -> PurePosixPath:
    return PurePosixPath(BULK_DIR, str(category_id), f"{group_id}.csv")


def categories_page_path(params: InventoryParams) -> PurePosixPath:
    """The category listing's page: sortOrder and sortDesc in the name when not the default
    (only the default order is materialised), then the paging."""
    return PurePosixPath(CATEGORIES_DIR, f"{canonical_query(params) or 'index'}.json")
