"""Response models of the published API (spec §2), the OpenAPI document generated from them,
and the human help page `/v1.39.0/help/index`.

The pages themselves are written from SQL-built fragments (see `sql/export/`, `sql/api/`); these
models describe and validate them: every published page must parse into them.
"""

from __future__ import annotations

import html
from decimal import Decimal
from typing import Annotated, Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, StrictStr, model_validator
from pydantic.json_schema import WithJsonSchema, models_json_schema

from pipeline.api import DEFAULTS, MAX_LIMIT, PARAMETER_NAMES, VERSION

Int32 = Annotated[
    StrictInt,
    Field(ge=-(2**31), le=2**31 - 1),
    WithJsonSchema({"type": "integer", "format": "int32"}),
]
Int64 = Annotated[
    StrictInt,
    Field(ge=-(2**63), le=2**63 - 1),
    WithJsonSchema({"type": "integer", "format": "int64"}),
]
Money = Annotated[
    Decimal,
    Field(ge=0, decimal_places=2),
    WithJsonSchema({"type": "number", "format": "double"}),
]
T = TypeVar("T")

_STRICT = ConfigDict(extra="forbid")


class Condition(BaseModel):
    model_config = _STRICT
    conditionId: Int64 = Field(description="May be an invalid or deprecated condition identifier.")
    name: StrictStr | None = Field(description="Condition name; null for an unknown condition.")


class Language(BaseModel):
    model_config = _STRICT
    languageId: Int32 = Field(description="Language identifier.")
    name: StrictStr | None = Field(description="Language name; null for an unknown language.")
    abbr: StrictStr | None = Field(description="Abbreviation. May be null.")


CUSTOM_KEYS = ("storePriceCustomId", "title", "description", "mainImageUrl", "additionalImageUrls")


class Sku(BaseModel):
    """One SKU entry; custom listings carry five more keys, generic ones never do."""

    model_config = _STRICT
    skuId: Int64 = Field(description="SKU identifier.")
    storePriceCustomId: Int64 | None = Field(default=None, description="Custom listings only.")
    condition: Condition
    language: Language
    foil: StrictBool = Field(description="Whether the SKU is foil.")
    price: Money = Field(description="Price; may have decimals.")
    quantity: Int32 = Field(ge=1, description="Quantity available.")
    isFeatured: StrictBool | None = Field(description="May be null.")
    isCustom: StrictBool = Field(description="Whether the listing is a custom listing.")
    title: StrictStr | None = Field(default=None, description="Custom listings only.")
    description: StrictStr | None = Field(default=None, description="Custom listings only.")
    mainImageUrl: StrictStr | None = Field(default=None, description="Custom listings only.")
    additionalImageUrls: list[StrictStr] | None = Field(
        default=None, description="Custom listings only; [] when there are none."
    )

    @model_validator(mode="after")
    def _custom_keys(self) -> Sku:
        present = [k for k in CUSTOM_KEYS if k in self.model_fields_set]
        if self.isCustom:
            if len(present) != len(CUSTOM_KEYS):
                raise ValueError(f"custom entry lacks {set(CUSTOM_KEYS) - set(present)}")
            if self.storePriceCustomId is None or self.additionalImageUrls is None:
                raise ValueError("custom entry needs storePriceCustomId and additionalImageUrls")
        elif present:
            raise ValueError(f"generic entry has custom keys {present}")
        return self


class StoreProduct(BaseModel):
    model_config = _STRICT
    productId: Int64 = Field(description="Product identifier.")
    name: StrictStr = Field(description="Product name.")
    category: StrictStr = Field(description="Name of the category of the product.")
    group: StrictStr = Field(description="Name of the group of the product.")
    rarity: StrictStr | None = Field(description="Rarity label. May be null.")
    number: StrictStr | None = Field(description="Card number. May be null.")
    skuCount: Int32 = Field(ge=1, description="Number of SKU entries of the product.")
    lowestPrice: Money = Field(description="Lowest price among all its SKU entries.")
    skus: list[Sku] = Field(description="At most skuLimit entries, by price descending.")

    @model_validator(mode="after")
    def _consistent(self) -> StoreProduct:
        if len(self.skus) > self.skuCount:
            raise ValueError("more skus than skuCount")
        if self.skus and min(s.price for s in self.skus) < self.lowestPrice:
            raise ValueError("a sku is cheaper than lowestPrice")
        return self


class Category(BaseModel):
    model_config = _STRICT
    categoryId: Int32
    name: StrictStr
    modifiedOn: (
        Annotated[StrictStr, Field(pattern=r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}$")] | None
    )
    displayName: StrictStr | None
    seoCategoryName: StrictStr | None
    sealedLabel: StrictStr | None
    nonSealedLabel: StrictStr | None
    conditionGuideUrl: StrictStr | None
    isScannable: StrictBool | None
    popularity: Int32 | None


class PagedResponse(BaseModel, Generic[T]):
    """The paged envelope of a successful response (spec 2.1)."""

    model_config = _STRICT
    totalItems: Int32 = Field(ge=1, description="All matching items, not only this page's.")
    success: Literal[True]
    errors: list[StrictStr] = Field(max_length=0)
    results: list[T] = Field(min_length=1)


class ErrorResponse(BaseModel):
    """Every error: no totalItems, one message per problem, no results."""

    model_config = _STRICT
    success: Literal[False]
    errors: list[StrictStr] = Field(min_length=1)
    results: list[Any] = Field(max_length=0)


InventoryPage = PagedResponse[StoreProduct]
CategoryPage = PagedResponse[Category]

_PARAM_DOCS: dict[str, tuple[str, str, str]] = {
    # name: (type, format, meaning)
    "categoryId": ("integer", "int32", "Only products of this category."),
    "categoryName": (
        "string",
        "",
        "Only products of this category, by name (case-insensitive, exact).",
    ),
    "groupId": ("integer", "int64", "Only products of this group."),
    "groupName": ("string", "", "Only products of this group, by name (case-insensitive, exact)."),
    "productName": ("string", "", "Only products whose name contains this (case-insensitive)."),
    "skuLimit": ("integer", "int32", "Maximum number of SKUs shown per product (>= 0)."),
    "sort": (
        "string",
        "",
        "price|minprice|name|productname, then asc (default) or desc. "
        "Without sort: price desc. Ties break on productId.",
    ),
    "includeGeneric": ("boolean", "", "When true, generic listings are returned."),
    "includeCustom": ("boolean", "", "When true, custom listings are returned."),
    "channelId": ("integer", "int32", "Channel searched; 0 is the default marketplace channel."),
    "includeExcludedCategories": ("boolean", "", "When true, excluded categories are returned."),
    "offset": ("integer", "int32", "Products to skip (>= 0)."),
    "limit": ("integer", "int32", f"Products per page (1..{MAX_LIMIT})."),
}


def _parameter(name: str) -> dict[str, Any]:
    kind, fmt, meaning = _PARAM_DOCS[name]
    schema: dict[str, Any] = {"type": kind}
    if fmt:
        schema["format"] = fmt
    default = getattr(DEFAULTS, name)
    if default is not None and name != "sort":
        schema["default"] = default
    return {
        "name": name,
        "in": "query",
        "required": False,
        "description": meaning,
        "schema": schema,
    }


def openapi_document() -> dict[str, Any]:
    """OpenAPI 3.0 document of the published operations, schemas generated from the models."""
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
        "openapi": "3.0.3",
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
                        "404": error("No stores were found. / No products were found."),
                    },
                }
            },
            "/catalog/categories": {
                "get": {
                    "operationId": "Catalog_GetCategories",
                    "summary": "List All Categories",
                    "parameters": [_parameter("offset"), _parameter("limit")],
                    "responses": {
                        "200": ok("PagedResponse_Category_", "The requested page, by categoryId."),
                        "400": error("offset or limit out of range."),
                        "404": error("No categories were found."),
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
        f"<tr><td><code>{n}</code></td><td>{_PARAM_DOCS[n][0]}</td>"
        f"<td>{html.escape(_default_text(n))}</td>"
        f"<td>{html.escape(_PARAM_DOCS[n][2])}</td></tr>"
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
<p>All categories by <code>categoryId</code>, paged with <code>offset</code> and
<code>limit</code>.</p>
<h2>Responses</h2>
<p>Success: <code>{{"totalItems":N,"success":true,"errors":[],"results":[...]}}</code>.
Errors: <code>{{"success":false,"errors":["message"],"results":[]}}</code> with status 400 (a bad
parameter, named in the message) or 404 (<code>No stores were found.</code>,
<code>No products were found.</code>, <code>URL not found.</code>).</p>
</body></html>
"""
