"""The nginx locations of the store's other inventory operations (docs/contract.md §5), for
`pipeline.export.nginx`: the store's categories and groups from their materialised files (the
default request of a channel, paged; lower-case store keys), everything else from the live
upstream (`@live`)."""

from __future__ import annotations

import re
from collections.abc import Callable

from pipeline.api.operations import STORE_OPERATIONS
from pipeline.api.urls import STORES_DIR
from pipeline.contract import STORED_KEY_PATTERN
from pipeline.export.nginx.live import LIVE, TO_LIVE
from pipeline.export.nginx.syntax import regex_location


def store_operation_locations(only_get: str, serve: Callable[[str, str], str]) -> str:
    """The two locations: the materialised lists, and every operation's path to `@live`."""
    stores = re.escape(STORES_DIR)
    lists = "|".join(re.escape(op.path) for op in STORE_OPERATIONS if op.materialised)
    every = "|".join(
        re.escape(op.path).replace(re.escape("{productId}"), "[^/]+") for op in STORE_OPERATIONS
    )
    store = f"(?<list_store>{STORED_KEY_PATTERN})"
    return (
        f"{regex_location(f'^/{stores}/{store}/(?<list_op>{lists})/?$')}\n"
        f"{only_get}"
        + serve(f"/{STORES_DIR}/$list_store/$list_op/$list_page.json", LIVE)
        + "    }\n"
        f"{regex_location(f'^/{stores}/[^/]+/(?:{every})/?$')}\n"
        f"{only_get}{TO_LIVE}"
        "    }"
    )
