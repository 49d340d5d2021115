"""The shards a Ray night does not build again: those handed the same inputs as their parts in
the release the night started from (docs/cluster.md, "How a night runs", step 4)."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Sequence
from pathlib import Path

import duckdb
import orjson
import polars as pl
import pyarrow as pa  # type: ignore[import-untyped]  # no stubs

from pipeline.distributed.bucket_shard import ShardSummary
from pipeline.distributed.parts import SHARD_DOC, ShardDoc
from pipeline.distributed.shards import Shard
from pipeline.distributed.tasks import IngestedPart, rows_sums
from pipeline.export.pages.inventory import record_counts
from pipeline.export.records.digests import StoreRecord, add_sums, code_digest, table_sums
from pipeline.export.records.manifest import Manifest
from pipeline.paths import MANIFEST_PARQUET, STORES
from pipeline.publish.bucket import FAILURES, get, open_bucket
from pipeline.publish.commit import NightStart
from pipeline.settings import Settings
from pipeline.transform import StepResult


def shard_inputs(
    settings: Settings,
    con: duckdb.DuckDBPyConnection,
    catalog: Sequence[str],
    listings: tuple[Sequence[str], dict[str, str]],
    stores: Sequence[dict[str, pa.Table]],
    read: Sequence[IngestedPart],
) -> list[str]:
    """Each shard's digest (hex) of what it is handed. `catalog` names the catalog's tables in
    `con`, `listings` gives the listings files' names and types, `stores` each shard's rows of
    the stores tables and `read` the files' tasks' sums."""
    names, typed = listings
    common = hashlib.sha256(code_digest())
    common.update(settings.export.pages_json() + b"\0")
    common.update(f"duckdb {duckdb.__version__}\n".encode())
    common.update(orjson.dumps([list(names), typed], option=orjson.OPT_SORT_KEYS) + b"\n")
    for table in catalog:
        common.update(f"{table}:{table_sums(con, table)}\n".encode())
    digests = []
    for index, tables in enumerate(stores):
        digest = common.copy()
        digest.update(f"shard {index} of {len(stores)}\n".encode())
        for name, rows in sorted(tables.items()):
            digest.update(f"{name}:{rows_sums(con, rows)}\n".encode())
        listed = add_sums(r.shard_sums[index] for r in read)
        digest.update(f"raw.listings:{listed}\n".encode())
        digests.append(digest.hexdigest())
    return digests


def reusable(start: NightStart, inputs: Sequence[str]) -> dict[int, tuple[str, ShardDoc]]:
    """The shards whose parts in the release the night started from were built from `inputs`,
    as index -> (prefix, document). No shard for a release of another shard count, or with
    no parts; a document that cannot be read has its shard built again."""
    named = start.current.shard_parts if start.current is not None else ()
    if len(named) != len(inputs) or start.current is None or not start.current.common_part_sha256:
        return {}  # no parts of this count, or a release whose manifest is not in parts
    store = open_bucket(start.url)

    async def read(prefix: str) -> ShardDoc | None:
        try:
            got = await get(store, prefix + SHARD_DOC)
        except FAILURES:
            return None
        return ShardDoc.parse(got.data) if got is not None else None

    async def read_all() -> list[ShardDoc | None]:
        return await asyncio.gather(*(read(p) for p in named))

    docs = asyncio.run(read_all())
    return {
        index: (prefix, doc)
        for index, (prefix, doc) in enumerate(zip(named, docs, strict=True))
        if doc is not None and doc.inputs == inputs[index]
    }


def reused_summary(shard: Shard, prefix: str, doc: ShardDoc, records: pa.Table) -> ShardSummary:
    """What the shard's task would have handed back: its parts (`prefix`), its stores all
    carried (`records`, theirs at the night's start), its listings' sums and its steps' rows
    (`doc`); no second, no byte uploaded."""
    frame = pl.from_arrow(records)
    assert isinstance(frame, pl.DataFrame)
    stored = [
        StoreRecord(*row) for row in frame.drop("store_key", "version", "part_sha256").iter_rows()
    ]
    steps = [StepResult(name, rows, 0.0) for name, rows in doc.steps]
    counts = record_counts(stored, len(stored))
    return ShardSummary(shard, prefix, counts, steps, doc.sums, 0.0, 0.0, 0, 0, 0, reused=True)


def lay_out_reused(folder: Path, records: pa.Table) -> None:
    """A reused shard's folder as the finalize reads a shard's (its tables downloaded beside):
    its stores' records with their versions at the night's start, and no manifest row (every
    store of it is carried: its rows are the previous manifest's, `compose`)."""
    pl.from_arrow(records).write_parquet(folder / STORES)  # type: ignore[union-attr]
    Manifest().frame.write_parquet(folder / MANIFEST_PARQUET, statistics=False)
