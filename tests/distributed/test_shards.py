"""A store's shard is the CRC-32 of its key modulo the count: the same in every process, so
that a night's driver and the next night's agree on which shard's parts hold a store."""

from __future__ import annotations

import os
import subprocess
import sys

from pipeline.distributed import shards
from pipeline.distributed.shards import Shard, shard_of

KEYS = ("store-00003", "store-00017", "kardkastle", "tiny7", "a1b2c3d4")


def test_a_stores_shard_is_the_same_in_every_process() -> None:
    assert [shard_of(key, 4) for key in KEYS] == [0, 0, 3, 1, 3]
    # The module's own file alone (it imports only the standard library), not through its
    # package, whose __init__ imports the whole pipeline: a second of CPU a process.
    folder = os.path.dirname(shards.__file__)
    script = f"import sys; sys.path[:0] = [{folder!r}]; from shards import shard_of as s; "
    script += "print(s('kardkastle', 4))"
    for seed in ("1", "2"):  # Python's own hash() would differ between these
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True)
        assert done.stdout == b"3\n", done.stderr
    assert str(Shard(1, 4)) == "1/4" and sorted([Shard(1, 2), Shard(0, 2)])[0] == Shard(0, 2)
