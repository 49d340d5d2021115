"""The shards of a Ray night's stores: which shard holds a store, by the CRC-32 of its key,
stable across runs, machines and Python versions."""

from __future__ import annotations

import zlib
from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class Shard:
    """Shard `index` of `count`: the stores whose key hashes (`shard_of`) to `index`."""

    index: int
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def shard_of(store_key: str, count: int) -> int:
    """The shard of a store: stable across runs, machines and Python versions."""
    return zlib.crc32(store_key.encode()) % count
