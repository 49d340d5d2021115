"""The shards' tables a Ray night's driver keeps in its release, `shards/<i>/`, beside the
listings' raw rows, each folder naming the parts in the bucket its tables came from. A later
night that reuses those parts takes the tables from there, hard-linked, and downloads none of
them (docs/cluster.md, "How a night runs", step 8)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from pathlib import Path

import orjson

from pipeline.distributed.finalize import SHARDS_DIR
from pipeline.distributed.tasks import SHARD_TABLES

KEPT = "parts.json"  # in a release's shards/<i>/: the parts' prefix, each table file's stat
TABLES = tuple(f"{t}.parquet" for t in SHARD_TABLES)


def _stat(path: Path) -> list[int]:
    """What a file is recognised by, as `filestat` does: its size, mtime and inode."""
    found = path.stat()
    return [found.st_size, found.st_mtime_ns, found.st_ino]


def keep_tables(release: Path, folders: Sequence[Path], prefixes: Sequence[str]) -> None:
    """Move each shard's table files (but the listings', which `keep_listings_rows` moved
    already) from its work folder into the release's `shards/<i>/`, and record there the
    prefix of the parts they are and a stat of each."""
    for index, (folder, prefix) in enumerate(zip(folders, prefixes, strict=True)):
        target = release / SHARDS_DIR / str(index)
        target.mkdir(parents=True, exist_ok=True)
        for name in TABLES:
            if (folder / name).exists():
                shutil.move(folder / name, target / name)
        files = {name: _stat(target / name) for name in TABLES}
        (target / KEPT).write_bytes(orjson.dumps({"parts": prefix, "files": files}))


def carry_tables(previous: Path | None, index: int, prefix: str, folder: Path) -> bool:
    """Hard-link shard `index`'s table files into `folder` from the release `previous`, when
    it kept them for the parts at `prefix` and each is as it was written (its stat); whether
    they were (else nothing is left in `folder`, and they are downloaded)."""
    if previous is None:
        return False
    kept = previous / SHARDS_DIR / str(index)
    try:
        doc = orjson.loads((kept / KEPT).read_bytes())
        if doc["parts"] != prefix or sorted(doc["files"]) != sorted(TABLES):
            return False
        if any(_stat(kept / n) != doc["files"][n] for n in TABLES):
            return False
        folder.mkdir(parents=True)
        for name in TABLES:
            os.link(kept / name, folder / name)
    except (OSError, orjson.JSONDecodeError, KeyError, TypeError):
        shutil.rmtree(folder, ignore_errors=True)
        return False
    return True
