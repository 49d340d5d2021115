"""Shards of stores (`--shard I/N`, the Ray build's tasks): which shard holds a store, by the
CRC-32 of its key, stable across runs, machines and Python versions; and the shard as a
setting (`I/N` in TOML, the environment and reports)."""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Annotated

from pydantic import BeforeValidator, PlainSerializer
from pydantic_settings import NoDecode


@dataclass(frozen=True, order=True)
class Shard:
    """Shard `index` of `count`: the stores whose key hashes (CRC-32) to `index` modulo `count`.
    Written `I/N` in settings and reports."""

    index: int
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    def holds(self, store_key: str) -> bool:
        return shard_of(store_key, self.count) == self.index

    @classmethod
    def from_text(cls, value: str) -> Shard:
        """`I/N` as a Shard, I below N."""
        index, slash, count = value.partition("/")
        if not (slash and index.isdigit() and count.isdigit() and int(count) > 0):
            raise ValueError(f"shard {value!r}: expected I/N, e.g. 0/4")
        if int(index) >= int(count):
            raise ValueError(f"shard {value}: the index must be below the count")
        return cls(int(index), int(count))


def shard_of(store_key: str, count: int) -> int:
    """The shard of a store: stable across runs, machines and Python versions."""
    return zlib.crc32(store_key.encode()) % count


# Text in TOML and the environment (NoDecode: not JSON), a Shard in code, text again when dumped.
def _shard_from_text(value: object) -> object:
    return Shard.from_text(value) if isinstance(value, str) else value


ShardSetting = Annotated[
    Shard, BeforeValidator(_shard_from_text), PlainSerializer(str, return_type=str), NoDecode
]
