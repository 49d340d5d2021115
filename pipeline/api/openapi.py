"""The OpenAPI 3.1 document of the published operations (`/v1.39.0/help/openapi.json`),
generated from the response models, the parameters' definitions and the store operations; with
what it declares beside them (`openapi_http`: ETag and 304, the bulk files, the token)."""

from __future__ import annotations

import functools
from typing import Any

import orjson
from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from pipeline.api.catalog import CATALOG_OPERATIONS, ID_RANGES, MAX_IDS, CatalogOperation
from pipeline.api.catalog_models import ProductIdPage, SearchRequest
from pipeline.api.catalog_models import responses as catalog_responses
from pipeline.api.docs import parameter
from pipeline.api.models import (
    OPERATION_RESPONSES,
    BulkIndex,
    CategoryPage,
    ErrorResponse,
    InventoryPage,
    Token,
    TokenError,
)
from pipeline.api.openapi_http import bulk_paths, token_path, validated
from pipeline.api.operations import STORE_OPERATIONS
from pipeline.api.params import CATEGORY_PARAMETERS, INT32, PARAMETER_NAMES
from pipeline.api.responses import NO_CATEGORIES, NO_PRODUCTS, NO_STORES
from pipeline.api.search import POST_OPERATIONS, PostOperation
from pipeline.api.urls import VERSION

STORE_KEY = {
    "name": "storeKey",
    "in": "path",
    "required": True,
    "description": "Key of the store (case-insensitive).",
    "schema": {"type": "string"},
}
PRODUCT_ID = {
    "name": "productId",
    "in": "path",
    "required": True,
    "description": "The product's identifier.",
    "schema": {"type": "integer", "format": "int64"},
}


def _ref(model: type[BaseModel]) -> dict[str, Any]:
    return {"$ref": f"#/components/schemas/{model.__name__.replace('[', '_').replace(']', '_')}"}


def _responses(model: type[BaseModel], what: str, empty: str) -> dict[str, Any]:
    def body(schema: type[BaseModel], description: str) -> dict[str, Any]:
        return {
            "description": description,
            "content": {"application/json": {"schema": _ref(schema)}},
        }

    return {
        "200": body(model, what),
        "400": body(ErrorResponse, "A parameter does not parse or is out of range."),
        "404": body(ErrorResponse, empty),
    }


def _path_id(name: str) -> dict[str, Any]:
    """A catalog operation's path id: one integer, or a comma-separated list of them."""
    fmt = "int32" if ID_RANGES[name] == INT32 else "int64"
    if name.endswith("Ids"):
        what = f"A comma-separated list of 1 to {MAX_IDS} {fmt} identifiers, each answered once."
        schema: dict[str, Any] = {"type": "string"}
    else:
        what, schema = "The identifier.", {"type": "integer", "format": fmt}
    return {"name": name, "in": "path", "required": True, "description": what, "schema": schema}


def _catalog_operation(op: CatalogOperation) -> dict[str, Any]:
    """A catalog or price operation: its 200 (and 207 for a list of ids), 400 and 404."""
    ok, partial = catalog_responses(op.operation_id, op.form)
    answers = _responses(ok, "The answer." if op.form != "page" else "The requested page.", op.none)
    if partial is not None:
        answers["207"] = {
            "description": "Some ids were found: their results, and an error for each other.",
            "content": {"application/json": {"schema": _ref(partial)}},
        }
    path = [_path_id(op.id_name)] if op.id_name else []
    return {
        "get": {
            "operationId": op.operation_id,
            "summary": op.summary,
            "description": op.description,
            "parameters": [*path, *(parameter(n) for n in op.parameters)],
            "responses": dict(sorted(answers.items())),
        }
    }


def _post_operation(op: PostOperation) -> dict[str, Any]:
    """A search: a POST with a JSON body (`SearchRequest`), its 200, 400 and 404."""
    store = op.name == "store_search"
    path = [STORE_KEY] if store else []
    answered = InventoryPage if store else ProductIdPage
    empty = f"{NO_STORES} / {NO_PRODUCTS}" if store else f"{NO_CATEGORIES} / {NO_PRODUCTS}"
    answers = _responses(answered, "The requested page.", empty)
    answers["400"]["description"] = "A path id, parameter or body key is not valid."
    return {
        "post": {
            "operationId": op.operation_id,
            "summary": op.summary,
            "description": op.description,
            "parameters": [
                *path,
                _path_id("categoryId"),
                *(parameter(n) for n in op.parameters),
            ],
            "requestBody": {
                "required": True,
                "content": {"application/json": {"schema": _ref(SearchRequest)}},
            },
            "responses": answers,
        }
    }


def openapi_document() -> dict[str, Any]:
    """The document: every operation, schemas generated from the models."""
    catalog = [catalog_responses(op.operation_id, op.form) for op in CATALOG_OPERATIONS]
    models: list[type[BaseModel]] = [
        InventoryPage,
        CategoryPage,
        *OPERATION_RESPONSES.values(),
        *dict.fromkeys(m for pair in catalog for m in pair if m is not None),
        SearchRequest,
        ProductIdPage,
        BulkIndex,
        Token,
        TokenError,
        ErrorResponse,
    ]
    _, schemas = models_json_schema(
        [(m, "validation") for m in models], ref_template="#/components/schemas/{model}"
    )
    paths: dict[str, Any] = {
        "/stores/{storeKey}/inventory/products": {
            "get": {
                "operationId": "Stores_GetStoreInventory",
                "summary": "List Product Summary",
                "parameters": [STORE_KEY, *(parameter(n) for n in PARAMETER_NAMES)],
                "responses": _responses(
                    InventoryPage, "The requested page.", f"{NO_STORES} / {NO_PRODUCTS}"
                ),
            }
        },
        "/catalog/categories": {
            "get": {
                "operationId": "Catalog_GetCategories",
                "summary": "List All Categories",
                "parameters": [parameter(n) for n in CATEGORY_PARAMETERS],
                "responses": _responses(CategoryPage, "The requested page.", NO_CATEGORIES),
            }
        },
    }
    for op in STORE_OPERATIONS:
        path_parameters = [STORE_KEY, PRODUCT_ID] if op.by_product else [STORE_KEY]
        paths[f"/stores/{{storeKey}}/{op.path}"] = {
            "get": {
                "operationId": op.operation_id,
                "summary": op.summary,
                "description": op.description,
                "parameters": [*path_parameters, *(parameter(n) for n in op.parameters)],
                "responses": _responses(
                    OPERATION_RESPONSES[op.operation_id],
                    "The answer." if not op.paged else "The requested page.",
                    f"{NO_STORES} / {NO_PRODUCTS}",
                ),
            }
        }
    for catalog_op in CATALOG_OPERATIONS:
        paths[f"/{catalog_op.path}"] = _catalog_operation(catalog_op)
    for post_op in POST_OPERATIONS:
        paths[f"/{post_op.path}"] = _post_operation(post_op)
    paths.update(bulk_paths(_ref, _path_id))
    validated(paths)
    paths["/token"] = token_path(_ref)
    return {
        "openapi": "3.1.0",
        "info": {"title": "Store inventory (static reproduction)", "version": VERSION},
        "servers": [{"url": f"/{VERSION}"}],
        "paths": paths,
        "components": {"schemas": schemas.get("$defs", {})},
    }


@functools.cache  # the models' schemas take pydantic 50 ms: once a process
def openapi_json() -> bytes:
    """The OpenAPI document as published at /v1.39.0/help/openapi.json."""
    return orjson.dumps(openapi_document(), option=orjson.OPT_INDENT_2)
