"""What the OpenAPI document declares beside the API's operations (`api.openapi`): the HTTP
every server answers with (each GET's ETag, and its 304 to an If-None-Match naming it), the
bulk files with their byte ranges, and the token endpoint."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from pipeline.api.models import BulkIndex, ErrorResponse, Token, TokenError
from pipeline.api.responses import CSV, PARQUET, URL_NOT_FOUND

# A model's schema, as the document refers to it.
Ref = Callable[[type[BaseModel]], dict[str, Any]]

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


def validated(paths: dict[str, Any]) -> None:
    """Every GET of `paths`: its 200's ETag, If-None-Match, and the 304 to a request naming it."""
    for item in paths.values():
        get = item.get("get")
        if get is None:
            continue
        get["parameters"] = [*get["parameters"], IF_NONE_MATCH]
        get["responses"]["200"]["headers"] = {"ETag": ETAG}
        get["responses"] = dict(sorted({**get["responses"], "304": NOT_MODIFIED}.items()))


def _file(media_type: str) -> dict[str, Any]:
    """A file's content: bytes, or text (UTF-8) for a `text/` type."""
    text = media_type.startswith("text/")
    return {media_type: {"schema": {"type": "string", **({} if text else {"format": "binary"})}}}


def bulk_paths(ref: Ref, path_id: Callable[[str], dict[str, Any]]) -> dict[str, Any]:
    """The bulk files (docs/serving.md, "Bulk files"): the index, a category's Parquet file and
    a group's CSV file; the files answer byte ranges. `ref` names a model's schema, `path_id`
    describes a path id."""
    category = {**path_id("categoryId"), "description": "The category's identifier."}
    group = {**path_id("groupId"), "description": "The group's identifier."}
    missing = {
        "description": f"{URL_NOT_FOUND} (no such file)",
        "content": {"application/json": {"schema": ref(ErrorResponse)}},
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

    index = {"application/json": {"schema": ref(BulkIndex)}}
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


def token_path(ref: Ref) -> dict[str, Any]:
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
                    "content": {"application/json": {"schema": ref(Token)}},
                },
                "400": {
                    "description": "Another grant type or none; no client id.",
                    "headers": no_store,
                    "content": {"application/json": {"schema": ref(TokenError)}},
                },
            },
        }
    }
