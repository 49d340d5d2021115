"""The help (`/help`), a page of no store: the help page and the OpenAPI document, both made
by `pipeline.api` from the API's own parameters and models."""

from __future__ import annotations

from pipeline.api import urls
from pipeline.api.docs import help_page
from pipeline.api.openapi import openapi_json
from pipeline.export.writer import SiteWriter


def write_help(writer: SiteWriter) -> None:
    """The help page and the OpenAPI document."""
    writer.write(str(urls.HELP_FILE), help_page().encode())
    writer.write(str(urls.OPENAPI_FILE), openapi_json())
