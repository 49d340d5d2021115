"""The requests the serving tests send: random query strings, the canonical URL of every
published page, the URL of every bulk file, and every way nginx goes to the live upstream."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import quote_plus

import orjson
from hypothesis import strategies as st

from pipeline.api.catalog import CATALOG_OPERATIONS
from pipeline.api.operations import STORE_OPERATIONS
from pipeline.api.urls import (
    BULK_DIR,
    CATEGORIES_PATH,
    OPENAPI_PATH,
    PRODUCTS_DIR,
    STORES_DIR,
    VERSION,
)
from pipeline.export.nginx.live import LIVE


def query_string(draw: st.DrawFn, params: dict[str, list[str]], max_size: int) -> str:
    """A query string of up to `max_size` of `params` (name -> values), each name spelled in
    one of three cases, percent-encoded."""
    parts = []
    for name in draw(st.lists(st.sampled_from(sorted(params)), max_size=max_size)):
        spelled = draw(st.sampled_from([name, name.lower(), name.upper()]))
        parts.append(f"{quote_plus(spelled)}={quote_plus(draw(st.sampled_from(params[name])))}")
    return "&".join(parts)


def bulk_targets(output: Path) -> list[str]:
    """The URL of every published bulk file (its site path)."""
    files = orjson.loads((output / "manifest.json").read_bytes())["files"]
    return [f"/{f['path']}" for f in files if f["path"].startswith(f"{BULK_DIR}/")]


def materialised_targets(output: Path) -> list[str]:
    """The canonical URL of every published page (the API's; not the bulk files)."""
    targets = []
    for entry in orjson.loads((output / "manifest.json").read_bytes())["files"]:
        path: str = entry["path"]
        if path.endswith(".json") and "/help/" not in path and not path.startswith(BULK_DIR):
            resource, name = path.rsplit("/", 1)
            query = name.removesuffix(".json")
            targets.append(f"/{resource}" + ("" if query == "index" else f"?{query}"))
    return targets


# A request that goes to the live upstream, with its headers.
LiveRequest = tuple[str, dict[str, str]]


def live_requests() -> list[LiveRequest]:
    """A request for each way nginx goes to the live upstream, from the operation registry: each
    store operation (the summary, and every one of `STORE_OPERATIONS`) for a store with no
    file (lower case: its file is missing) and a key nginx reads no file for (upper case), the
    category listing in an order that has no file, a request with a precondition, and each
    catalog and price operation (`CATALOG_OPERATIONS`)."""
    requests: list[LiveRequest] = []
    operations = [PRODUCTS_DIR, *(op.path.replace("{productId}", "1") for op in STORE_OPERATIONS)]
    for store in ("nobody", "NOBODY"):
        requests += [(f"/{STORES_DIR}/{store}/{path}", {}) for path in operations]
    requests += [(f"{CATEGORIES_PATH}?sortOrder=categoryId", {}), (OPENAPI_PATH, {"If-Match": "*"})]
    # each catalog and price operation, for an id no page has, or a query string nginx does not
    # read as the API does (a page's location goes to the upstream when it has no file)
    any_id = re.compile(r"\{\w+\}")
    requests += [
        (f"/{VERSION}/{any_id.sub('999999', op.path)}{'' if op.id_name else '?x=%FF'}", {})
        for op in CATALOG_OPERATIONS
    ]
    return requests


LOCATION = re.compile(r'\n    location ~ "((?:[^"\\]|\\.)*)" \{\n(.*?)\n    \}', re.DOTALL)


def live_locations(conf: str) -> list[re.Pattern[str]]:
    """The regular expressions of the configuration's locations that may go to `@live`, as
    Python reads them (nginx's escapes undone, PCRE's named groups renamed)."""
    patterns = []
    for found in LOCATION.finditer(conf):
        if LIVE in found[2]:
            pattern = re.sub(r"\\(.)", r"\1", found[1]).replace("(?<", "(?P<")
            patterns.append(re.compile(pattern))
    return patterns
