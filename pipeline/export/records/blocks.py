"""The market history's nights gathered into blocks: once `build.history_block_nights` listed
nights stand in their own files, with a newer one besides tonight's, the build gathers the
oldest of them into one file a table, sorted by the table's key then the night, with DuckDB's
default row groups. A night is so written once and copied once; no later build copies it
again, and a query for one key reads one row group a block. (docs/analysts.md, "History across
nights"; docs/benchmarks.md, the 400 nights' rows.)

A block is `OUTPUT/history/block-<first>_<last>/`: `nights.txt` first, then each table's file,
written under a temporary name and renamed. It is published with the release that lists it,
or not at all: a block a killed build left is not listed, and the next build, gathering the
same nights, keeps each of its files that was whole (renamed) and writes the others."""

from __future__ import annotations

import os
from pathlib import Path

import duckdb

from pipeline import db
from pipeline.export.records.nights import (
    _WRITING,
    BLOCK,
    BLOCK_NIGHTS,
    BLOCK_SEPARATOR,
    SUFFIX,
    Piece,
    _names,
    on_disk,
    read_record,
)
from pipeline.export.records.state import sealed_file_problem
from pipeline.paths import NIGHTS, NIGHTS_LIST
from pipeline.transform.steps import NIGHT_TABLES

# Each table's key: a block's rows sorted by it, then by night, so that one key's nights are
# together (a prototype read one SKU's 400 nights in 15-24 ms sorted, 182 ms unsorted; row
# groups of 8,192 rows were 4 times slower than DuckDB's default).
ORDER = {
    "sku_market": "sku_id",
    "product_market": "product_id, printing_id",
    "store_volume": "store_key",
}
Held = dict[str, dict[str, Piece]]  # table -> night -> the file holding it


def known(output: Path, followed: Path | None, published: set[str]) -> tuple[Held, str | None]:
    """Each table's published nights and the file holding each: the files the followed
    release's views read (its NIGHTS_LIST, no file opened), then, for a night they do not
    hold, a block or a night's file found on disk (its schema read when listed). With why the
    list could not be trusted, if it could not."""
    held: Held = {t.name: {} for t in NIGHT_TABLES}
    problem = None
    pieces = None if followed is None else read_record(followed, output)
    if pieces is not None and followed is not None:
        problem = sealed_file_problem(followed, NIGHTS_LIST)
        if problem is not None:  # said once here if the list itself is to blame, else by the seal's
            pieces = None
            own = problem.startswith(f"{followed / NIGHTS_LIST}:")
            problem = f"{problem}; the history's files are found on disk instead" if own else None
    for table, of_table in (pieces or {}).items():
        for piece in of_table:
            if piece.path.is_file():  # a file moved since is found on disk below
                held[table].update(dict.fromkeys(piece.nights, piece))
    listed = {p.path.parent.name for of_table in (pieces or {}).values() for p in of_table}
    for table, blocks in _blocks_on_disk(output, listed).items():
        for piece in blocks:
            fits = published.issuperset(piece.nights)
            if fits and not any(n in held[table] for n in piece.nights):
                held[table].update(dict.fromkeys(piece.nights, piece))
    for table, files in on_disk(output.resolve()).items():
        for night, path in files.items():
            if night in published and night not in held[table]:
                held[table][night] = Piece(path, (night,))
    return held, problem


def _blocks_on_disk(output: Path, known: set[str]) -> dict[str, list[Piece]]:
    """The whole block files on disk, by table (their schemas not read), but those of the
    folders `known` (listed already: their nights.txt is not read)."""
    found: dict[str, list[Piece]] = {t.name: [] for t in NIGHT_TABLES}
    root = output.resolve() / NIGHTS
    for folder in sorted(f for f in _names(root) if f.startswith(BLOCK) and f not in known):
        nights = _block_nights(root / folder)
        names = set(_names(root / folder))
        for table in NIGHT_TABLES:
            if nights and f"{table.name}{SUFFIX}" in names:
                found[table.name].append(Piece(root / folder / f"{table.name}{SUFFIX}", nights))
    return found


def _block_nights(folder: Path) -> tuple[str, ...]:
    try:
        return tuple((folder / BLOCK_NIGHTS).read_text().split())
    except OSError:
        return ()


def listed(held: Held, published: set[str], keep: int) -> list[str]:
    """The nights history.* lists, oldest first: the last `keep` published nights that every
    table holds."""
    whole = published.intersection(*(h.keys() for h in held.values()))
    return sorted(whole)[-keep:]  # build ids sort by their start time


def gather(
    con: duckdb.DuckDBPyConnection,
    output: Path,
    held: Held,
    nights: list[str],
    tonight: str,
    size: int,
) -> Held:
    """Gather the oldest listed nights still in their own files, `size` at a time, while more
    than `size` of them came before tonight (the last night before tonight, and tonight, stay
    in their own files: a query of the last two nights reads two small files). Returns
    `held` with the gathered nights in their blocks."""
    own = [n for n in nights if n != tonight and not any(_in_block(h[n]) for h in held.values())]
    while len(own) > size:
        block, own = own[:size], own[size:]
        for table, piece in write_block(con, output, block, held).items():
            held[table].update(dict.fromkeys(block, piece))
    return held


def _in_block(piece: Piece) -> bool:
    return piece.path.parent.name.startswith(BLOCK)


def write_block(
    con: duckdb.DuckDBPyConnection, output: Path, nights: list[str], held: Held
) -> dict[str, Piece]:
    """The block of `nights` (published, each in its own file): its folder, its `nights.txt`,
    then each table's file from the nights' files, sorted by key then night, under a
    temporary name then renamed. A whole file of the same block that a killed build left is
    kept as it is."""
    folder = output.resolve() / NIGHTS / f"{BLOCK}{nights[0]}{BLOCK_SEPARATOR}{nights[-1]}"
    folder.mkdir(parents=True, exist_ok=True)
    listing = "".join(f"{n}\n" for n in nights)
    if _block_nights(folder) != tuple(nights):  # none yet, half written, or another's
        for name in _names(folder):
            (folder / name).unlink()
        writing = folder / f".{BLOCK_NIGHTS}{_WRITING}"
        writing.write_text(listing)
        os.replace(writing, folder / BLOCK_NIGHTS)
    written = {}
    for table in NIGHT_TABLES:
        target = folder / f"{table.name}{SUFFIX}"
        if not target.is_file():
            files = [str(held[table.name][n].path) for n in nights]
            writing = folder / f".{target.name}{_WRITING}"
            con.execute(
                f"COPY (SELECT * FROM read_parquet([{', '.join(map(db.literal, files))}], "
                "union_by_name = true, hive_partitioning = false) "
                f"ORDER BY {ORDER[table.name]}, build_id) TO $path "
                "(FORMAT parquet, COMPRESSION zstd)",
                {"path": str(writing)},
            )
            os.replace(writing, target)
        written[table.name] = Piece(target, tuple(nights)).known()
    return written
