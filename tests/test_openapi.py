"""The published OpenAPI document is valid OpenAPI (3.1), by a standard validator."""

from __future__ import annotations

from typing import Any

import orjson
from openapi_spec_validator import validate

from pipeline.api.openapi import openapi_document, openapi_json


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
