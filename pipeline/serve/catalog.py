"""Answers of the catalog and marketplace price operations (docs/contract.md §7): a materialised
page from its file, anything else from the warehouse by the operation's SQL file."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path, PurePosixPath

import duckdb

from pipeline.api.catalog import CatalogOperation, page_path, parse_ids
from pipeline.api.params import InventoryParams, parse_after_path
from pipeline.api.responses import ApiError, Response, envelope, results_envelope
from pipeline.export.pages.catalog import rows
from pipeline.serve.headers import page as read_page


def parse(
    op: CatalogOperation, segment: str | None, query: str
) -> tuple[list[int], InventoryParams]:
    """The path's ids and the query's parameters, or ApiError(400) naming every bad one (the
    path's id first)."""
    errors: list[str] = []
    ids: list[int] = []
    if op.id_name is not None and segment is not None:
        try:
            ids = parse_ids(op.id_name, segment)
        except ApiError as exc:
            errors = exc.messages
    return ids, parse_after_path(errors, query, op.parameters, op.sortable)


def live_answer(
    con: duckdb.DuckDBPyConnection, op: CatalogOperation, ids: list[int], params: InventoryParams
) -> Response:
    """The operation's answer from the warehouse, or ApiError(404) when it is empty."""
    found = rows(con, op, ids, params)
    # A list of ids: the results in the order the ids are first given (the SQL's within one).
    given: dict[int | None, int] = {i: place for place, i in enumerate(dict.fromkeys(ids))}
    if op.form == "ids":
        found.sort(key=lambda r: given[r.item_id])
    results = [r.result_json for r in found if r.result_json is not None]
    if not results:
        raise ApiError(404, [op.none])
    if op.form == "page":
        return Response(200, envelope(found[0].total_items or 0, results))
    if op.form == "list":
        return Response(200, results_envelope(results))
    have = {r.item_id for r in found}
    missing = [op.missing.format(id=i) for i in given if i not in have]
    return Response(207 if missing else 200, results_envelope(results, missing))


def materialised_page(
    op: CatalogOperation, ids: list[int], params: InventoryParams
) -> PurePosixPath | None:
    """The site file that may answer a request (None: only the warehouse can)."""
    if not op.materialised or len(ids) > 1:
        return None
    return page_path(op, ids[0] if ids else None, params)


def answer(
    warehouse: Callable[[], duckdb.DuckDBPyConnection],
    site: Path | None,
    op: CatalogOperation,
    segment: str | None,
    query: str,
) -> Response:
    """The response to a request of the operation: 400s first, then its page or the warehouse."""
    ids, params = parse(op, segment, query)
    page = materialised_page(op, ids, params)
    found = read_page(site / page) if site is not None and page is not None else None
    if found is not None:
        return found
    return live_answer(warehouse(), op, ids, params)
