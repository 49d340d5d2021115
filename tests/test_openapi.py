"""The published OpenAPI document is valid OpenAPI (3.1), by a standard validator."""

from __future__ import annotations

import orjson
from openapi_spec_validator import validate

from pipeline.api.openapi import openapi_document, openapi_json


def test_the_openapi_document_is_valid() -> None:
    document = openapi_document()
    assert document["openapi"] == "3.1.0"
    validate(document)
    assert orjson.loads(openapi_json()) == document
