"""The OpenAPI document of the published operations, generated from the response models and
the parameters' definitions, and the human help page `/v1.39.0/help/index`."""

from __future__ import annotations

import html
from typing import Any

import orjson
from pydantic.json_schema import models_json_schema

from pipeline.api.models import CategoryPage, ErrorResponse, InventoryPage
from pipeline.api.params import (
    BOOLS,
    CATEGORY_PARAMETERS,
    DEFAULTS,
    INT32,
    INT_RANGES,
    MAX_LIMIT,
    PARAMETER_NAMES,
)
from pipeline.api.responses import NO_CATEGORIES, NO_PRODUCTS, NO_STORES, URL_NOT_FOUND
from pipeline.api.urls import VERSION

_PARAM_DOCS: dict[str, str] = {
    "categoryId": "Only products of this category.",
    "categoryName": "Only products of this category, by name (case-insensitive, exact).",
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
    "offset": "Products to skip (>= 0).",
    "limit": f"Products per page (1..{MAX_LIMIT}).",
    "sortOrder": "The field of the category to sort by (case-insensitive); by name when not "
    "given. Text compares case-insensitively; a null comes first; ties break on categoryId.",
    "sortDesc": "When true, the order is descending.",
}


def _schema_type(name: str) -> tuple[str, str]:
    """A parameter's OpenAPI type and format, from its definition in `pipeline.api.params`."""
    if name in INT_RANGES:
        return "integer", "int32" if INT_RANGES[name] == INT32 else "int64"
    return ("boolean", "") if name in BOOLS else ("string", "")


def _parameter(name: str) -> dict[str, Any]:
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


def openapi_document() -> dict[str, Any]:
    """OpenAPI 3.1 document of the published operations, schemas generated from the models."""
    _, schemas = models_json_schema(
        [
            (InventoryPage, "validation"),
            (CategoryPage, "validation"),
            (ErrorResponse, "validation"),
        ],
        ref_template="#/components/schemas/{model}",
    )
    defs = schemas.get("$defs", {})

    def ok(schema: str, what: str) -> dict[str, Any]:
        return {
            "description": what,
            "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{schema}"}}},
        }

    def error(what: str) -> dict[str, Any]:
        return ok("ErrorResponse", what)

    return {
        "openapi": "3.1.0",
        "info": {"title": "Store inventory (static reproduction)", "version": VERSION},
        "servers": [{"url": f"/{VERSION}"}],
        "paths": {
            "/stores/{storeKey}/inventory/products": {
                "get": {
                    "operationId": "Stores_GetStoreInventory",
                    "summary": "List Product Summary",
                    "parameters": [
                        {
                            "name": "storeKey",
                            "in": "path",
                            "required": True,
                            "description": "Key of the store (case-insensitive).",
                            "schema": {"type": "string"},
                        },
                        *(_parameter(n) for n in PARAMETER_NAMES),
                    ],
                    "responses": {
                        "200": ok("PagedResponse_StoreProduct_", "The requested page."),
                        "400": error("A parameter does not parse or is out of range."),
                        "404": error(f"{NO_STORES} / {NO_PRODUCTS}"),
                    },
                }
            },
            "/catalog/categories": {
                "get": {
                    "operationId": "Catalog_GetCategories",
                    "summary": "List All Categories",
                    "parameters": [_parameter(name) for name in CATEGORY_PARAMETERS],
                    "responses": {
                        "200": ok("PagedResponse_Category_", "The requested page, by name."),
                        "400": error("offset or limit out of range."),
                        "404": error(NO_CATEGORIES),
                    },
                }
            },
        },
        "components": {"schemas": defs},
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


def help_page() -> str:
    """The human page served at /v1.39.0/help/index."""
    rows = "\n".join(
        f"<tr><td><code>{n}</code></td><td>{_schema_type(n)[0]}</td>"
        f"<td>{html.escape(_default_text(n))}</td>"
        f"<td>{html.escape(_PARAM_DOCS[n])}</td></tr>"
        for n in PARAMETER_NAMES
    )
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>API {VERSION} help</title>
<style>body{{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem}}
table{{border-collapse:collapse}}
td,th{{border:1px solid #ccc;padding:.3rem .6rem;text-align:left}}</style>
</head><body>
<h1>Store inventory API {VERSION}</h1>
<p>A static reproduction of the marketplace API's store inventory summary. Every request names
the version: paths without it, with <code>/current/</code> or with another version answer 404.
The machine-readable description is <a href="openapi.json">openapi.json</a>.</p>
<h2>GET /{VERSION}/stores/{{storeKey}}/inventory/products</h2>
<p>The products a store has for sale, one entry per product with its SKU count, lowest price and
its most expensive SKUs, paged. Store keys are case-insensitive.</p>
<table><tr><th>Parameter</th><th>Type</th><th>Default</th><th>Meaning</th></tr>
{rows}
</table>
<h2>GET /{VERSION}/catalog/categories</h2>
<p>All categories by <code>name</code> (or by the field <code>sortOrder</code> names,
descending with <code>sortDesc=true</code>; ties break on <code>categoryId</code>), paged with
<code>offset</code> and <code>limit</code>.</p>
<h2>Responses</h2>
<p>Success: <code>{{"totalItems":N,"success":true,"errors":[],"results":[...]}}</code>.
Errors: <code>{{"success":false,"errors":["message"],"results":[]}}</code> with status 400 (a bad
parameter, named in the message) or 404 (<code>{NO_STORES}</code>,
<code>{NO_PRODUCTS}</code>, <code>{URL_NOT_FOUND}</code>).</p>
</body></html>
"""


def openapi_json() -> bytes:
    """The OpenAPI document as published at /v1.39.0/help/openapi.json."""
    return orjson.dumps(openapi_document(), option=orjson.OPT_INDENT_2)
