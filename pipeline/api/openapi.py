"""The OpenAPI 3.1 document of the published operations (`/v1.39.0/help/openapi.json`),
generated from the response models, the parameters' definitions and the store operations: the
HTTP around them (ETag, 304), the bulk files (byte ranges) and the token endpoint."""

from __future__ import annotations

import functools
from typing import Any

import orjson
from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from pipeline.api.catalog import CATALOG_OPERATIONS, ID_RANGES, MAX_IDS, CatalogOperation
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
from pipeline.api.operations import STORE_OPERATIONS
from pipeline.api.params import CATEGORY_PARAMETERS, INT32, PARAMETER_NAMES
from pipeline.api.responses import (
    CSV,
    NO_CATEGORIES,
    NO_PRODUCTS,
    NO_STORES,
    PARQUET,
    URL_NOT_FOUND,
)
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


# The HTTP around the bytes (docs/serving.md, "HTTP around the bytes"), on every GET.
ETAG = {
    "description": "The representation's validator: strong, weak (W/) when gzip-compressed.",
    "schema": {"type": "string"},
}
IF_NONE_MATCH = {
    "name": "If-None-Match",
    "in": "header",
    "required": False,
    "description": "ETags (or *): 304 with no body when one names the current representation.",
    "schema": {"type": "string"},
}
NOT_MODIFIED = {
    "description": "If-None-Match names the current representation: no body.",
    "headers": {"ETag": ETAG},
}
# The bulk files' byte ranges.
RANGE = {
    "name": "Range",
    "in": "header",
    "required": False,
    "description": "One byte range (bytes=first-last, first-, -suffix): 206 with those bytes. "
    "Several ranges: 200, the whole file.",
    "schema": {"type": "string"},
}
IF_RANGE = {
    "name": "If-Range",
    "in": "header",
    "required": False,
    "description": "An ETag: the range when it names the current file, else 200 whole.",
    "schema": {"type": "string"},
}
CONTENT_RANGE = {"description": "bytes first-last/size", "schema": {"type": "string"}}


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


def openapi_document() -> dict[str, Any]:
    """The document: every operation, schemas generated from the models."""
    catalog = [catalog_responses(op.operation_id, op.form) for op in CATALOG_OPERATIONS]
    models: list[type[BaseModel]] = [
        InventoryPage,
        CategoryPage,
        *OPERATION_RESPONSES.values(),
        *dict.fromkeys(m for pair in catalog for m in pair if m is not None),
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
    paths.update(bulk_paths())
    for item in paths.values():  # every GET: its ETag, and 304 to a request naming it
        get = item["get"]
        get["parameters"] = [*get["parameters"], IF_NONE_MATCH]
        get["responses"]["200"]["headers"] = {"ETag": ETAG}
        get["responses"] = dict(sorted({**get["responses"], "304": NOT_MODIFIED}.items()))
    paths["/token"] = token_path()
    return {
        "openapi": "3.1.0",
        "info": {"title": "Store inventory (static reproduction)", "version": VERSION},
        "servers": [{"url": f"/{VERSION}"}],
        "paths": paths,
        "components": {"schemas": schemas.get("$defs", {})},
    }


def _file(media_type: str) -> dict[str, Any]:
    """A file's content: bytes, or text (UTF-8) for a `text/` type."""
    text = media_type.startswith("text/")
    return {media_type: {"schema": {"type": "string", **({} if text else {"format": "binary"})}}}


def bulk_paths() -> dict[str, Any]:
    """The bulk files (docs/serving.md, "Bulk files"): the index, a category's Parquet file and
    a group's CSV file; the files answer byte ranges."""
    category = {**_path_id("categoryId"), "description": "The category's identifier."}
    group = {**_path_id("groupId"), "description": "The group's identifier."}
    missing = {
        "description": f"{URL_NOT_FOUND} (no such file)",
        "content": {"application/json": {"schema": _ref(ErrorResponse)}},
    }
    ranged = {
        "206": {
            "description": "The one byte range asked for.",
            "headers": {"Content-Range": CONTENT_RANGE, "ETag": ETAG},
        },
        "404": missing,
        "416": {
            "description": "The range starts past the file's end (Content-Range: bytes */size).",
            "headers": {"Content-Range": CONTENT_RANGE},
        },
    }

    def get(op_id: str, summary: str, path: list[dict[str, Any]], content: dict[str, Any]) -> Any:
        ranges = [RANGE, IF_RANGE] if "application/json" not in content else []
        answers = {"200": {"description": "The whole file.", "content": content}}
        answers.update(ranged if ranges else {"404": missing})
        return {
            "get": {
                "operationId": op_id,
                "summary": summary,
                "parameters": [*path, *ranges],
                "responses": answers,
            }
        }

    index = {"application/json": {"schema": _ref(BulkIndex)}}
    return {
        "/bulk/index.json": get("Bulk_GetIndex", "The bulk files' index", [], index),
        "/bulk/{categoryId}.parquet": get(
            "Bulk_GetCategoryParquet",
            "A category's products and prices, Parquet",
            [category],
            _file(PARQUET),
        ),
        "/bulk/{categoryId}/{groupId}.csv": get(
            "Bulk_GetGroupCsv",
            "A group's products and prices, CSV",
            [category, group],
            _file(CSV.partition(";")[0]),
        ),
    }


def token_path() -> dict[str, Any]:
    """`POST /token` (docs/contract.md §10), also answered at `/token` outside the version."""
    form = {
        "type": "object",
        "properties": {
            "grant_type": {"type": "string", "enum": ["client_credentials"]},
            "client_id": {"type": "string"},
            "client_secret": {"type": "string"},
        },
        "required": ["grant_type", "client_id"],
    }
    no_store = {"Cache-Control": {"description": "no-store", "schema": {"type": "string"}}}
    return {
        "post": {
            "operationId": "Token_Post",
            "summary": "Get a bearer token",
            "description": "Any client id and secret get a token; no read asks for one. "
            "Also answered at /token, where the live service has it.",
            "requestBody": {
                "required": True,
                "content": {"application/x-www-form-urlencoded": {"schema": form}},
            },
            "responses": {
                "200": {
                    "description": "The token, as the live service's token endpoint gives it.",
                    "headers": no_store,
                    "content": {"application/json": {"schema": _ref(Token)}},
                },
                "400": {
                    "description": "Another grant type or none; no client id.",
                    "headers": no_store,
                    "content": {"application/json": {"schema": _ref(TokenError)}},
                },
            },
        }
    }


@functools.cache  # the models' schemas take pydantic 50 ms: once a process
def openapi_json() -> bytes:
    """The OpenAPI document as published at /v1.39.0/help/openapi.json."""
    return orjson.dumps(openapi_document(), option=orjson.OPT_INDENT_2)
