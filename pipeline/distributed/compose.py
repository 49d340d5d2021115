"""A Ray night's manifest and changes, composed on the driver's disk out of core, with the
one-machine build's bytes (docs/cluster.md, "How a night runs", step 8)."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Iterator, Sequence
from pathlib import Path

import duckdb
import orjson
import polars as pl
import pyarrow as pa  # type: ignore[import-untyped]  # no stubs
import pyarrow.parquet as pq  # type: ignore[import-untyped]  # no stubs

from pipeline import db
from pipeline.api.urls import STORE_PAGE
from pipeline.db import SqlFile
from pipeline.errors import BuildError, first_line
from pipeline.export.records.manifest import (
    Manifest,
    write_changes_from,
    write_manifest_json,
    write_manifest_parquet,
)
from pipeline.export.records.state import sealed_file_problem
from pipeline.paths import BUCKET_RELEASE, CHANGES, MANIFEST, MANIFEST_PARQUET
from pipeline.publish.bucket import FAILURES, open_bucket
from pipeline.publish.commit import NightStart
from pipeline.publish.manifests import get_list, get_rows
from pipeline.transform.steps import (
    RELEASE_CARRIED_STORES,
    RELEASE_CHANGED,
    RELEASE_COUNTS,
    RELEASE_MANIFEST_ROWS,
    RELEASE_NO_ROWS,
    RELEASE_REMOVED,
    RELEASE_REPEATED_PATH,
    RELEASE_ROWS,
    RELEASE_SORTED_ROWS,
)

CHANGED, REMOVED = "changed.parquet", "removed.parquet"  # in the folder, beside the files
# Rows a row group of the composed files, read and written out as JSON at a time: a batch's
# text is made several times over (encoded, joined, to bytes), about 200 bytes a row each.
ROWS = 25_000
# DuckDB's memory for the sort and the changes: fixed, not `duckdb_memory_limit`, since the
# warehouse's connection holds up to that beside it; past it, the sort spills to `folder`.
MEMORY = "256MB"


def compose_release_files(
    folder: Path,
    parts: Sequence[Path],
    base: Path | None,
    versioned: Sequence[str],
    memory_limit: str,
) -> dict[str, int]:
    """Write `manifest.parquet`, `manifest.json` and `changes.json` in `folder`; return the
    counts of `file_counts`. `parts` are the shards' manifests, `base` the one of the release
    the night started from, if any. A store of `versioned` that no shard wrote a page of is
    carried, with its rows from `base`."""
    folder.mkdir(parents=True, exist_ok=True)
    con = db.connect(memory_limit=memory_limit, threads=1, temp_directory=folder / "tmp")
    try:
        _views(con, parts, base, versioned)
        _refuse_repeats(con)
        manifest, changed, removed = (folder / n for n in (MANIFEST_PARQUET, CHANGED, REMOVED))
        sorted_rows = con.sql(RELEASE_SORTED_ROWS.sql)
        write_manifest_parquet(str(manifest), sorted_rows.to_arrow_reader(ROWS))
        _view(con, "sorted", RELEASE_MANIFEST_ROWS, {"files": [str(manifest)]})
        _copy(con, RELEASE_CHANGED, changed)
        _copy(con, RELEASE_REMOVED, removed)
        files, total = con.execute(RELEASE_COUNTS.sql).fetchone() or (0, 0)
    finally:
        con.close()
    shutil.rmtree(folder / "tmp", ignore_errors=True)
    write_manifest_json(folder / MANIFEST, _batches(manifest))
    write_changes_from(folder / CHANGES, _batches(changed), _batches(removed))
    changes = pq.ParquetFile(changed).metadata.num_rows
    return {
        "files": int(files),
        "files_unchanged": int(files) - changes,
        "files_removed": pq.ParquetFile(removed).metadata.num_rows,
        "bytes": int(total),
    }


def previous_manifest(start: NightStart, local: Path | None, work: Path) -> Path:
    """The manifest of the release the night started from (`start.current`), as Parquet: the
    output's own copy when its current release is that one (`local`, marked with the bucket's
    release at its commit, its manifest sealed), so no row is downloaded; else its rows, read
    from the parts its list names, into `work`."""
    assert start.current is not None
    if local is not None and sealed_file_problem(local, MANIFEST_PARQUET) is None:
        try:
            marked = orjson.loads((local / BUCKET_RELEASE).read_bytes())
        except (OSError, orjson.JSONDecodeError):
            marked = None
        if marked == {"url": start.url, "release": start.current.release}:
            return local / MANIFEST_PARQUET
    store, release = open_bucket(start.url), start.current

    async def rows() -> Manifest | None:
        listed = await get_list(store, release)
        return None if listed is None else await get_rows(store, listed.items())

    try:
        found = asyncio.run(rows())
    except FAILURES as exc:
        raise BuildError(f"{start.url}: {first_line(exc)}; nothing was published") from None
    if found is None:
        raise BuildError(
            f"{start.url}/{release.manifest}: missing, or not the manifest its release names "
            "(or a part of it); nothing was published"
        )
    target = work / "previous-manifest.parquet"
    write_manifest_parquet(str(target), [found.frame.to_arrow()])
    return target


def _views(
    con: duckdb.DuckDBPyConnection,
    parts: Sequence[Path],
    base: Path | None,
    versioned: Sequence[str],
) -> None:
    """`base` (the previous release's rows, or none) and `release` (the shards' rows and the
    carried stores' rows of `base`), over the Parquet files; `carried`, a table of the stores
    only (the versioned ones without a row in the shards' manifests)."""
    if base is None:
        _view(con, "base", RELEASE_NO_ROWS)
    else:
        _view(con, "base", RELEASE_MANIFEST_ROWS, {"files": [str(base)]})
    _view(con, "written", RELEASE_MANIFEST_ROWS, {"files": [str(p) for p in parts]})
    con.register("versioned", pa.table({"store": pa.array(versioned, pa.string())}))
    store_page: dict[str, object] = {"store_page": "^" + STORE_PAGE.pattern}
    con.execute("CREATE TABLE carried AS\n" + RELEASE_CARRIED_STORES.sql, store_page)
    _view(con, "release", RELEASE_ROWS, store_page)


def _refuse_repeats(con: duckdb.DuckDBPyConnection) -> None:
    """A path twice is refused, as `Manifest` refuses it."""
    twice = con.execute(RELEASE_REPEATED_PATH.sql).fetchone()
    if twice is not None:
        raise ValueError(f"{twice[0]}: the same file twice in one site")


def _view(
    con: duckdb.DuckDBPyConnection,
    name: str,
    query: SqlFile,
    params: dict[str, object] | None = None,
) -> None:
    """A view of the connection, `name`, over the rows of `query` with its values bound."""
    con.sql(query.sql, params=params).create_view(name)


def _copy(con: duckdb.DuckDBPyConnection, query: SqlFile, target: Path) -> None:
    """The rows of `query` as Parquet, in row groups of about `ROWS` rows (`_batches`)."""
    con.execute(
        "COPY (\n" + query.sql + ") TO $path (FORMAT parquet, ROW_GROUP_SIZE $rows)",
        {"path": str(target), "rows": ROWS},
    )


def _batches(path: Path) -> Iterator[pl.DataFrame]:
    """The rows of a Parquet file, in order, a row group at a time, read by one thread: the
    driver's memory stays that of one group however many rows the file holds (pyarrow's
    `iter_batches` read ahead, and its peak grew with the file)."""
    file = pq.ParquetFile(path)
    for group in range(file.num_row_groups):
        frame = pl.from_arrow(file.read_row_group(group, use_threads=False))
        assert isinstance(frame, pl.DataFrame)
        yield frame
