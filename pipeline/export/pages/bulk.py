"""The bulk files (docs/serving.md, "Bulk files"): for each category, a CSV per group of its
products and their market prices, one row per product x printing, in the columns of the public
catalog mirrors' ProductsAndPrices.csv (and printingId); a typed Parquet file of the category's
rows; and their index (each file's path, bytes and sha256, and the build that last changed one
of them, with its time). The same rows give the same bytes, so the writer links an unchanged
file to the previous release's, the index too when no bulk file changed."""

from __future__ import annotations

import hashlib
import io
import os
from datetime import UTC, datetime

import duckdb
import orjson
import polars as pl

from pipeline.api.urls import BULK_INDEX, bulk_csv_path, bulk_parquet_path
from pipeline.errors import BuildError
from pipeline.export.writer import SiteWriter
from pipeline.transform.steps import BULK_ROWS

# The columns every bulk file has, in order, with their types in the Parquet files (a CSV
# writes modifiedOn as its text: `iso_time`). The ext<Name> columns follow, text, by name.
COLUMNS: dict[str, pl.DataType] = {
    "productId": pl.Int64(),
    "name": pl.String(),
    "cleanName": pl.String(),
    "imageUrl": pl.String(),
    "categoryId": pl.Int32(),
    "groupId": pl.Int64(),
    "url": pl.String(),
    "modifiedOn": pl.Datetime("us"),
    "imageCount": pl.Int32(),
    "lowPrice": pl.Decimal(18, 2),
    "midPrice": pl.Decimal(18, 2),
    "highPrice": pl.Decimal(18, 2),
    "marketPrice": pl.Decimal(18, 2),
    "directLowPrice": pl.Decimal(18, 2),
    "subTypeName": pl.String(),
    "printingId": pl.Int32(),
}
EXT = "ext"  # the prefix of the extendedData columns
# The build's time in the index, when set (the reproducible-builds convention): a whole number
# of seconds since 1970-01-01 UTC.
SOURCE_DATE_EPOCH = "SOURCE_DATE_EPOCH"
# Fixed Parquet settings: the same rows, the same bytes.
_PARQUET = {"compression": "zstd", "compression_level": 3, "statistics": True}
_ROW_GROUP = 100_000


def built_at(started: datetime | None = None) -> datetime:
    """The build's time as the index states it: SOURCE_DATE_EPOCH when set, else `started`
    (the build's start), else now."""
    epoch = os.environ.get(SOURCE_DATE_EPOCH)
    if epoch:
        try:
            return datetime.fromtimestamp(int(epoch), UTC)
        except (ValueError, OverflowError, OSError):
            raise BuildError(
                f"{SOURCE_DATE_EPOCH} {epoch!r}: not a whole number of seconds since 1970"
            ) from None
    return started or datetime.now(UTC)


def write_bulk_files(
    con: duckdb.DuckDBPyConnection,
    writer: SiteWriter,
    started: datetime | None = None,
    build_id: str | None = None,
    previous_index: bytes | None = None,
) -> int:
    """Every category's bulk files, then their index; the number of files written. The index
    is `previous_index` (the published release's), byte for byte, when it lists the very files
    written: an unchanged night leaves it as it was. Otherwise it names this build (`build_id`)
    and its start (`built_at`); with SOURCE_DATE_EPOCH set, no build (`null`): the same input
    then gives the same bytes."""
    rows = pl.from_arrow(con.sql(BULK_ROWS.sql).to_arrow_table())
    assert isinstance(rows, pl.DataFrame)
    ext = _ext_entries(rows)
    listed: list[dict[str, object]] = []

    def write(name: str, body: bytes, category_id: int, group_id: int | None) -> None:
        writer.write(name, body)
        entry = {"path": f"/{name}", "categoryId": category_id, "groupId": group_id}
        entry.update(bytes=len(body), sha256=hashlib.sha256(body).hexdigest())
        listed.append(entry)

    for (category_id,), category in rows.partition_by(
        "categoryId", as_dict=True, maintain_order=True
    ).items():
        assert isinstance(category_id, int)
        wide = _with_ext(category, ext)
        extended = [c for c in wide.columns if c.startswith(EXT)]
        typed = wide.select(*COLUMNS, *extended)
        write(str(bulk_parquet_path(category_id)), _parquet(typed), category_id, None)
        for (group_id,), group in wide.partition_by(
            "groupId", as_dict=True, maintain_order=True
        ).items():
            assert isinstance(group_id, int)
            held = [c for c in extended if group[c].null_count() < group.height]
            text = group.select(
                *(pl.col("modifiedOnText").alias(c) if c == "modifiedOn" else c for c in COLUMNS),
                *held,
            )
            buffer = io.BytesIO()
            text.write_csv(buffer)
            write(
                str(bulk_csv_path(category_id, group_id)), buffer.getvalue(), category_id, group_id
            )
    index = _unchanged_index(previous_index, listed)
    if index is None:
        stamp = built_at(started).strftime("%Y-%m-%dT%H:%M:%SZ")
        build = None if os.environ.get(SOURCE_DATE_EPOCH) else build_id
        index = orjson.dumps({"build": build, "builtAt": stamp, "files": listed})
    writer.write(str(BULK_INDEX), index)
    return len(listed) + 1


def _unchanged_index(previous: bytes | None, listed: list[dict[str, object]]) -> bytes | None:
    """`previous`, when it is an index listing exactly the files of `listed`; else None."""
    if previous is None:
        return None
    try:
        doc = orjson.loads(previous)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(doc, dict) or "build" not in doc or doc.get("files") != listed:
        return None
    return previous


def _ext_entries(rows: pl.DataFrame) -> pl.DataFrame:
    """(productId, column, value): each product's first extendedData entry of each column."""
    return (
        rows.select("productId", "ext")
        .unique("productId", keep="first", maintain_order=True)
        .explode("ext")
        .drop_nulls("ext")
        .unnest("ext")
        .unique(["productId", "column"], keep="first", maintain_order=True)
    )


def _with_ext(category: pl.DataFrame, ext: pl.DataFrame) -> pl.DataFrame:
    """The category's rows with an ext<Name> column (text) for each name that holds a value
    there, in name order (code points)."""
    own = ext.filter(pl.col("productId").is_in(category["productId"].implode())).drop_nulls("value")
    rows = category.drop("ext")
    if own.is_empty():
        return rows
    wide = own.pivot(on="column", index="productId", values="value")
    wide = wide.select("productId", *sorted(c for c in wide.columns if c != "productId"))
    return rows.join(wide, on="productId", how="left", maintain_order="left")


def _parquet(frame: pl.DataFrame) -> bytes:
    """The Parquet file of `frame`, written with fixed settings."""
    buffer = io.BytesIO()
    frame.write_parquet(buffer, row_group_size=_ROW_GROUP, **_PARQUET)  # type: ignore[arg-type]
    return buffer.getvalue()
