"""Damage done to a file the next build reads, to see that it is never trusted."""

from __future__ import annotations

from pathlib import Path


def truncate(path: Path) -> None:
    """The file cut to half its length."""
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def flip_a_bit(path: Path) -> None:
    """One bit of the middle byte flipped: the same length, other bytes."""
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))
