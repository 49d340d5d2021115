"""The nginx locations of the catalog and price operations (docs/contract.md §7), for
`pipeline.export.nginx`: a materialised operation's page from its file (a path id in plain
decimal, leading zeros folded; the paging of a category's groups; any query string the API
reads for an operation of no parameters), everything else from the live upstream (`@live`),
which answers it or says why not."""

from __future__ import annotations

import re
from collections.abc import Callable

from pipeline.api.catalog import CATALOG_OPERATIONS, ID_RANGES, CatalogOperation
from pipeline.api.urls import VERSION
from pipeline.export.nginx.live import TO_LIVE
from pipeline.export.nginx.params import PAGED, PLAIN
from pipeline.export.nginx.syntax import regex_location


def _path(op: CatalogOperation, capture: str) -> tuple[str, str]:
    """The location's regular expression of the operation's path, its id captured in plain
    decimal as `$<capture>`; and the page's folder with that variable in the id's place."""
    pattern, folder = re.escape(op.path), op.path
    if op.id_name is not None:
        digits = len(str(ID_RANGES[op.id_name][1])) - 1  # as many as always fit the type
        pattern = pattern.replace(
            re.escape(f"{{{op.id_name}}}"), f"0*(?<{capture}>[0-9]{{1,{digits}}})"
        )
        folder = folder.replace(f"{{{op.id_name}}}", f"${capture}")
    return pattern, folder


def catalog_locations(only_get: str, serve: Callable[[str, str], str]) -> str:
    """A location for each materialised operation, then one sending every other operation's
    path to `@live`."""
    blocks = []
    for index, op in enumerate(op for op in CATALOG_OPERATIONS if op.materialised):
        pattern, folder = _path(op, f"op_id{index}")
        page = PAGED if op.form == "page" else PLAIN
        blocks.append(
            f'    location ~ "^/{re.escape(VERSION)}/{pattern}/?$" {{\n'
            f"{only_get}" + serve(f"/{VERSION}/{folder}/${page}_page.json", "@live") + "    }"
        )
    every = "|".join(
        re.sub(r"\\\{\w+\\\}", "[^/]+", re.escape(op.path)) for op in CATALOG_OPERATIONS
    )
    blocks.append(
        f"{regex_location(f'^/{re.escape(VERSION)}/(?:{every})/?$')}\n{only_get}{TO_LIVE}    }}"
    )
    return "\n".join(blocks)
