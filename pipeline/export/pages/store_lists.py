"""The materialised pages of the store's other inventory operations (docs/contract.md §5): the
store's categories and groups, few and small, answered for a chunk of stores by the operations' own
SQL (every channel at once) and paged as the inventory pages are."""

from __future__ import annotations

import duckdb
import polars as pl

from pipeline.api.operations import STORE_OPERATIONS, page_path
from pipeline.api.params import DEFAULTS, InventoryParams, bind_params, used
from pipeline.api.responses import envelope
from pipeline.settings import ExportSettings
from pipeline.transform.steps import OPERATION_SQL

MATERIALISED = tuple(op for op in STORE_OPERATIONS if op.materialised)


def list_pages(
    con: duckdb.DuckDBPyConnection,
    stores: list[str],
    channels: list[int] | None,
    settings: ExportSettings,
) -> pl.DataFrame:
    """Every page of each materialised operation's default request, for every channel of these
    stores (of `channels`, when given) and every page size: columns store_key, name (the path
    under the store's folder) and body."""
    rows: list[tuple[str, str, bytes]] = []
    for op in MATERIALISED:
        sql = OPERATION_SQL[op].sql
        values = used(sql, bind_params(DEFAULTS, stores))
        values.update(channel_id=None, first_position=None, last_position=None)
        answers = con.execute(
            f"SELECT store_key, channel_id, result_json FROM ({sql}) "
            "WHERE $channels IS NULL OR list_contains($channels, channel_id) "
            "ORDER BY store_key, channel_id, position",
            {**values, "channels": channels},
        ).fetchall()
        by_request: dict[tuple[str, int], list[bytes]] = {}
        for key, channel, result in answers:
            by_request.setdefault((key, channel), []).append(result.encode())
        for (key, channel), results in by_request.items():
            for limit in dict.fromkeys(settings.limits):
                for offset in range(0, len(results), limit):
                    params = InventoryParams(channelId=channel, offset=offset, limit=limit)
                    path = page_path(op, key, params).as_posix().split(f"/{key}/", 1)[1]
                    body = envelope(len(results), results[offset : offset + limit])
                    rows.append((key, path, body))
    return pl.DataFrame(
        rows, schema={"store_key": pl.String, "name": pl.String, "body": pl.Binary}, orient="row"
    )
