"""The parameters' descriptions, from their definitions (read by the OpenAPI document,
`pipeline.api.openapi`), and the human help page `/v1.39.0/help/index`."""

from __future__ import annotations

import html
from typing import Any

from pipeline.api.catalog import CATALOG_OPERATIONS, MAX_IDS
from pipeline.api.operations import STORE_OPERATIONS
from pipeline.api.params import (
    BOOLS,
    DEFAULTS,
    INT32,
    INT_RANGES,
    MAX_LIMIT,
    PARAMETER_NAMES,
)
from pipeline.api.responses import NO_PRODUCTS, NO_STORES, URL_NOT_FOUND
from pipeline.api.search import BODY_NOT_VALID, POST_OPERATIONS
from pipeline.api.urls import VERSION

_PARAM_DOCS: dict[str, str] = {
    "categoryId": "Only products (groups) of this category.",
    "categoryName": "Only products (groups) of this category, by name (case-insensitive, exact).",
    "isSupplemental": "Only groups that are supplemental (true) or not (false).",
    "groupId": "Only products of this group.",
    "groupName": "Only products of this group, by name (case-insensitive, exact).",
    "productName": "Only products whose name contains this (case-insensitive).",
    "skuLimit": "Maximum number of SKUs shown per product (>= 0).",
    "sort": "price|minprice|name|productname, then asc (default) or desc. "
    "Without sort: price desc. Ties break on productId.",
    "includeGeneric": "When true, generic listings are returned.",
    "includeCustom": "When true, custom listings are returned.",
    "channelId": "Channel searched; 0 is the default marketplace channel.",
    "includeExcludedCategories": "When true, excluded categories are returned.",
    "offset": "Items (products, SKUs, categories, ...) to skip (>= 0).",
    "limit": f"Items per page (1..{MAX_LIMIT}).",
    "skuId": "Only listings of this SKU.",
    "inStockOnly": "When false, listings of quantity 0 count too.",
    "sortOrder": "The field of the category (group) to sort by (case-insensitive); by name "
    "when not given. Text compares case-insensitively; a null comes first; ties break on "
    "categoryId (groupId).",
    "sortDesc": "When true, the order is descending.",
    "getExtendedFields": "When true, each product carries its extendedData.",
    "includeSkus": "When true, each product carries its SKUs (by skuId).",
}


def _schema_type(name: str) -> tuple[str, str]:
    """A parameter's OpenAPI type and format, from its definition in `pipeline.api.params`."""
    if name in INT_RANGES:
        return "integer", "int32" if INT_RANGES[name] == INT32 else "int64"
    return ("boolean", "") if name in BOOLS else ("string", "")


def parameter(name: str) -> dict[str, Any]:
    """A query parameter, as the OpenAPI document describes it."""
    (kind, fmt), meaning = _schema_type(name), _PARAM_DOCS[name]
    schema: dict[str, Any] = {"type": kind}
    if fmt:
        schema["format"] = fmt
    default = getattr(DEFAULTS, name)
    if default is not None and name not in ("sort", "sortOrder"):
        schema["default"] = default
    return {
        "name": name,
        "in": "query",
        "required": False,
        "description": meaning,
        "schema": schema,
    }


def _default_text(name: str) -> str:
    default = getattr(DEFAULTS, name)
    return (
        ""
        if default is None
        else str(default).lower()
        if isinstance(default, bool)
        else str(default)
    )


def _table(names: tuple[str, ...]) -> str:
    rows = "\n".join(
        f"<tr><td><code>{n}</code></td><td>{_schema_type(n)[0]}</td>"
        f"<td>{html.escape(_default_text(n))}</td>"
        f"<td>{html.escape(_PARAM_DOCS[n])}</td></tr>"
        for n in names
    )
    head = "<tr><th>Parameter</th><th>Type</th><th>Default</th><th>Meaning</th></tr>"
    return f"<table>{head}\n{rows}\n</table>"


def _operations() -> str:
    """The store's other inventory operations (docs/contract.md §5), one section each."""
    return "\n".join(
        f"<h2>GET /{VERSION}/stores/{{storeKey}}/{html.escape(op.path)}</h2>\n"
        f"<p>{html.escape(op.description)}</p>\n{_table(op.parameters)}"
        for op in STORE_OPERATIONS
    )


def _catalog_operations() -> str:
    """The catalog and price operations (docs/contract.md §7), one section each."""
    return "\n".join(
        f"<h2>GET /{VERSION}/{html.escape(op.path)}</h2>\n"
        f"<p>{html.escape(op.description)} Nothing found: 404 <code>{html.escape(op.none)}"
        "</code>.</p>\n" + (_table(op.parameters) if op.parameters else "")
        for op in CATALOG_OPERATIONS
    )


# A search's body (docs/contract.md §12), key by key, in the official document's order.
SEARCH_BODY_DOCS = (
    ("sort", "string", "Relevance", "ProductName ASC, MinPrice DESC, MinPrice ASC or Relevance "
     "(case-insensitive). Relevance puts names equal to a ProductName value first, then names "
     "starting with one, each part by name."),
    ("limit", "integer", "10", f"Items per page (1..{MAX_LIMIT})."),
    ("offset", "integer", "0", "Items to skip (>= 0)."),
    ("filters", "array", "[]", "Filters {name, values}: ProductName (the name contains a "
     "value), SetName (the group is named one, All any), Number or Rarity (equal to one); "
     "every filter must match, any of its values; no values matches everything."),
    ("includeAggregates", "boolean", "", "Accepted and ignored."),
)  # fmt: skip


def _post_operations() -> str:
    """The searches (`api.search.POST_OPERATIONS`), answered to a POST with a JSON body."""
    body = "\n".join(
        f"<tr><td><code>{key}</code></td><td>{kind}</td><td>{html.escape(default)}</td>"
        f"<td>{html.escape(meaning)}</td></tr>"
        for key, kind, default, meaning in SEARCH_BODY_DOCS
    )
    head = "<tr><th>Body key</th><th>Type</th><th>Default</th><th>Meaning</th></tr>"
    sections = [
        f"<h2>POST /{VERSION}/{html.escape(op.path)}</h2>\n<p>{html.escape(op.description)}</p>\n"
        + (_table(op.parameters) if op.parameters else "")
        for op in POST_OPERATIONS
    ]
    return "\n".join(sections) + (
        f"\n<p>The body of both searches is a JSON object (strict UTF-8, every key optional, "
        f"null as absent, unknown keys ignored), whatever its Content-Type:</p>\n"
        f"<table>{head}\n{body}\n</table>\n<p>A body that is not a JSON object is 400 "
        f"<code>{html.escape(BODY_NOT_VALID)}</code>; a key of the wrong type or out of range "
        f"is 400 naming it. A GET of a search is 404; its answer is never cached.</p>"
    )


def help_page() -> str:
    """The human page served at /v1.39.0/help/index."""
    rows = _table(PARAMETER_NAMES)
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>API {VERSION} help</title>
<style>body{{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem}}
table{{border-collapse:collapse}}
td,th{{border:1px solid #ccc;padding:.3rem .6rem;text-align:left}}</style>
</head><body>
<h1>Store inventory API {VERSION}</h1>
<p>A static reproduction of the marketplace API's store inventory summary and the store's
other inventory operations. Every request names
the version: paths without it, with <code>/current/</code> or with another version answer 404.
The machine-readable description is <a href="openapi.json">openapi.json</a>.</p>
<h2>GET /{VERSION}/stores/{{storeKey}}/inventory/products</h2>
<p>The products a store has for sale, one entry per product with its SKU count, lowest price and
its most expensive SKUs, paged. Store keys are case-insensitive.</p>
{rows}
{_operations()}
<p>These operations read the summary's listings with its rules: the same parameters parse the
same way, and <code>{{productId}}</code> is an integer (int64).</p>
<h2>GET /{VERSION}/catalog/categories</h2>
<p>All categories by <code>name</code> (or by the field <code>sortOrder</code> names,
descending with <code>sortDesc=true</code>; ties break on <code>categoryId</code>), paged with
<code>offset</code> and <code>limit</code>.</p>
{_catalog_operations()}
<p>A path's <code>{{...Ids}}</code> is a comma-separated list of 1 to {MAX_IDS} identifiers,
answered in the order first given, each once: 200 when every one was found, 207 (success
true) with an error for each one that was not, 404 when none was. Market prices come from
every store's listings on channel 0 with a quantity, but those of a category the store
excludes.</p>
{_post_operations()}
<h2>POST /token</h2>
<p>The form <code>grant_type=client_credentials</code> with any <code>client_id</code> and
<code>client_secret</code> gets a bearer token, as from the live service's token endpoint (also
at <code>/token</code>, outside the version). No read asks for it: a client that
authenticates first works unchanged.</p>
<h2>Responses</h2>
<p>Success: <code>{{"totalItems":N,"success":true,"errors":[],"results":[...]}}</code>.
Errors: <code>{{"success":false,"errors":["message"],"results":[]}}</code> with status 400 (a bad
parameter, named in the message) or 404 (<code>{NO_STORES}</code>,
<code>{NO_PRODUCTS}</code>, <code>{URL_NOT_FOUND}</code>).</p>
</body></html>
"""
