"""The published OpenAPI document is valid OpenAPI (3.1), by a standard validator, and declares
the HTTP every server answers with, the bulk files and the token endpoint."""

from __future__ import annotations

from typing import Any

import orjson
from openapi_spec_validator import validate

from pipeline.api.openapi import openapi_document, openapi_json
from pipeline.api.responses import CSV, JSON, PARQUET


def test_the_openapi_document_is_valid() -> None:
    document = openapi_document()
    assert document["openapi"] == "3.1.0"
    validate(document)
    assert orjson.loads(openapi_json()) == document


def _optional_properties(document: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    """(schema, property) -> its schema, for every property a schema does not require."""
    return {
        (name, key): prop
        for name, schema in document["components"]["schemas"].items()
        for key, prop in schema.get("properties", {}).items()
        if key not in schema.get("required", [])
    }


def test_a_key_that_may_be_absent_is_optional_with_no_default() -> None:
    """A generator reads a default as "always present" (openapi-typescript 7 makes the key
    required), so a key an answer may leave out carries none: the five custom keys of a
    listing entry, the category keys that only an input column brings, a catalog
    product's keys that only a flag brings, and every key of a search's body."""
    optional = _optional_properties(openapi_document())
    custom = ("storePriceCustomId", "title", "description", "mainImageUrl", "additionalImageUrls")
    assert sorted(optional) == sorted(
        [(schema, key) for schema in ("QuantitySku", "Sku", "SkuListPrice") for key in custom]
        + [("Category", k) for k in ("categoryDescription", "categoryPageTitle", "isDirect")]
        + [("CatalogProduct", k) for k in ("extendedData", "skus")]
        + [("SearchRequest", k) for k in ("sort", "limit", "offset", "filters")]
        + [("SearchRequest", "includeAggregates"), ("SearchFilterValues", "name")]
        + [("SearchFilterValues", "values")]
    )
    assert {k: p["default"] for k, p in optional.items() if "default" in p} == {}


def test_the_document_declares_the_http_the_bulk_files_and_the_token() -> None:
    """What every server answers beside the bodies: each GET's ETag and its 304 to a request
    naming it; the bulk files (by their content types) with their byte ranges (Range, If-Range,
    206, 416); the token endpoint (a form, its token or its 400); `catalog/groups`."""
    document = openapi_document()
    paths = document["paths"]
    for path, item in paths.items():
        if "get" not in item:
            continue
        get = item["get"]
        assert "If-None-Match" in [p["name"] for p in get["parameters"]], path
        assert get["responses"]["200"]["headers"]["ETag"]["schema"] == {"type": "string"}
        assert "content" not in get["responses"]["304"], path
        assert "ETag" in get["responses"]["304"]["headers"], path
    bulk = {p: i["get"] for p, i in paths.items() if p.startswith("/bulk/")}
    assert {
        p: list(g["responses"]["200"]["content"]) for p, g in bulk.items()
    } == {  # the types every server sends (`api.responses.CONTENT_TYPES`)
        "/bulk/index.json": [JSON.partition(";")[0]],
        "/bulk/{categoryId}.parquet": [PARQUET],
        "/bulk/{categoryId}/{groupId}.csv": [CSV.partition(";")[0]],
    }
    for path in ("/bulk/{categoryId}.parquet", "/bulk/{categoryId}/{groupId}.csv"):
        names = [p["name"] for p in bulk[path]["parameters"]]
        assert {"Range", "If-Range"} <= set(names), path
        responses = bulk[path]["responses"]
        assert {"200", "206", "304", "404", "416"} == set(responses), path
        assert "Content-Range" in responses["206"]["headers"]
    token = paths["/token"]["post"]
    form = token["requestBody"]["content"]["application/x-www-form-urlencoded"]["schema"]
    assert form["properties"]["grant_type"]["enum"] == ["client_credentials"]
    assert set(token["responses"]) == {"200", "400"}
    schema = document["components"]["schemas"]["Token"]
    assert list(schema["properties"]) == [
        "access_token",
        "token_type",
        "expires_in",
        "userName",
        ".issued",
        ".expires",
    ]
    groups = paths["/catalog/groups"]["get"]
    assert [p["name"] for p in groups["parameters"]] == [
        "categoryId",
        "categoryName",
        "isSupplemental",
        "sortOrder",
        "sortDesc",
        "offset",
        "limit",
        "If-None-Match",
    ]
