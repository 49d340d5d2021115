"""Real-world export formats, converted at ingest into the contract's tables (docs/contract.md §2):
TCGplayer Seller Portal inventory exports (`stores/listings/{storeKey}.csv`, a `TCGplayer Id`
column) and TCGplayer catalog API page dumps (`catalog/{categories,groups,products}[/...].json`).
(docs/operating.md, "Two real-world formats")"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import polars as pl

from pipeline.contract import Table
from pipeline.ingest.raw import (
    MAX_RECORD_BYTES,
    PARSE_ERROR,
    SOURCE_FILE,
    SOURCE_ROW,
    TOO_LONG,
    json_text,
    json_values,
    scalar_columns,
    text_frame,
)

# The 18-column "My Store" export; the 16-column one lacks the last two. Only the header is
# the contract: the adapter reads columns by name.
SELLER_PORTAL_COLUMNS = [
    "TCGplayer Id",
    "Product Line",
    "Set Name",
    "Product Name",
    "Title",
    "Number",
    "Rarity",
    "Condition",
    "TCG Market Price",
    "TCG Direct Low",
    "TCG Low Price With Shipping",
    "TCG Low Price",
    "Total Quantity",
    "Add to Quantity",
    "TCG Marketplace Price",
    "Photo URL",
    "My Store Reserve Quantity",
    "My Store Price",
]
SELLER_PORTAL_KEY = "TCGplayer Id"
SELLER_PORTAL_REQUIRED = (SELLER_PORTAL_KEY, "Total Quantity", "TCG Marketplace Price")
MY_STORE = ("My Store Reserve Quantity", "My Store Price")
MY_STORE_SOURCE = "#My Store"
# A catalog API page is one JSON document, parsed whole: a larger one is refused (a page of the
# API holds at most a few thousand products, a few megabytes).
MAX_PAGE_BYTES = 64 << 20


class AdapterError(Exception):
    """A file in a real-world format that cannot be converted (names what is wrong)."""


def is_seller_portal(columns: list[str]) -> bool:
    return SELLER_PORTAL_KEY in columns


def from_seller_portal(frame: pl.DataFrame, store_key: str, source: str) -> pl.DataFrame:
    """Listings rows (text, `_source_file` and `_source_row`) from a Seller Portal export."""
    missing = [c for c in SELLER_PORTAL_REQUIRED if c not in frame.columns]
    if missing:
        raise AdapterError(f"missing Seller Portal column {', '.join(missing)}")

    def channel(channel_id: str, quantity: str, price: str, file: str) -> pl.DataFrame:
        parsed = pl.col(quantity).str.strip_chars().str.to_integer(strict=False)
        keep = parsed.is_null() | (parsed != 0)  # a value that does not parse goes on, to rejects
        if channel_id != "0":  # an empty "My Store" reserve is no channel-1 listing
            keep = keep & pl.col(quantity).is_not_null()
        listed = frame.filter(keep)
        return listed.select(
            pl.lit(file).alias(SOURCE_FILE),
            pl.col(SOURCE_ROW).cast(pl.Int64),
            pl.lit(store_key).alias("storeKey"),
            pl.lit(channel_id).alias("channelId"),
            pl.col(SELLER_PORTAL_KEY).alias("skuId"),
            pl.col(price).str.strip_chars().str.strip_prefix("$").alias("price"),
            pl.col(quantity).alias("quantity"),
        )

    parts = [channel("0", "Total Quantity", "TCG Marketplace Price", source)]
    if all(c in frame.columns for c in MY_STORE):
        parts.append(channel("1", *MY_STORE, source + MY_STORE_SOURCE))
    return pl.concat(parts)


def _extended(product: dict[str, Any], name: str) -> str | None:
    for item in product.get("extendedData") or []:
        if isinstance(item, dict) and item.get("name") == name:
            return json_text(item.get("value"))
    return None


def _row(item: dict[str, Any], table: Table) -> dict[str, str | None]:
    """A catalog API result's values, as text, or its parse error (`json_values`)."""
    row = json_values(item, scalar_columns(table))
    if table.name == "products" and "extendedData" in item and PARSE_ERROR not in row:
        row["rarity"] = _extended(item, "Rarity")
        row["number"] = _extended(item, "Number")
    return row


def read_api_dump(path: Path, table: Table, max_columns: int) -> pl.DataFrame:
    """Rows (text, `_source_row` = position in `results`) of one catalog API page dump of
    `table`, of at most `max_columns` columns."""
    try:
        if path.stat().st_size > MAX_PAGE_BYTES:
            raise AdapterError(
                f"a catalog API page of {path.stat().st_size:,} bytes, more than "
                f"{MAX_PAGE_BYTES:,}: split it into pages, as the API gives them"
            )
        envelope = orjson.loads(path.read_bytes())
    except OSError as exc:
        raise AdapterError(f"cannot read: {exc.strerror or exc}") from exc
    except orjson.JSONDecodeError as exc:
        raise AdapterError(f"not a catalog API page: {exc}") from exc
    if not isinstance(envelope, dict) or not isinstance(envelope.get("results"), list):
        raise AdapterError('not a catalog API page (no "results" list)')
    if envelope.get("success") is False:
        raise AdapterError(f"the page reports failure: {envelope.get('errors')}")
    rows: list[dict[str, str | int | None]] = []
    for index, item in enumerate(envelope["results"], start=1):
        row: dict[str, str | int | None] = {SOURCE_ROW: index}
        if not isinstance(item, dict):
            row[PARSE_ERROR] = "not a JSON object"
        else:
            values = _row(item, table)
            text = sum(len(v.encode()) for v in values.values() if isinstance(v, str))
            if PARSE_ERROR not in values and text > MAX_RECORD_BYTES:  # as a text file's record
                row[PARSE_ERROR] = TOO_LONG
            else:
                row.update(values)
        rows.append(row)
    return text_frame(rows, path=path, max_columns=max_columns)
