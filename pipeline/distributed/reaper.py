"""The reaper of a night's own local Ray cluster: when the driver ends, however it ends, every
process of that cluster goes with it. It runs as a script and imports only the standard
library (docs/cluster.md, "The reaper")."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress

_EVERY = 0.5  # seconds between two looks at the cluster's processes
_ROUNDS = 40  # of a quarter second, to kill what a dying raylet may still start

Processes = dict[int, bytes]  # pid -> its start time (so that a reused pid is not taken)


def _table() -> tuple[dict[int, list[int]], Processes]:
    """Every process's children, and every process's start time, from /proc."""
    child_pids: dict[int, list[int]] = {}
    starts: Processes = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return child_pids, starts
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as stat:
                line = stat.read()
        except OSError:  # gone
            continue
        fields = line[line.rindex(b")") + 2 :].split()  # after the command's name
        if fields[0] == b"Z":  # a zombie: dead already
            continue
        pid = int(name)
        child_pids.setdefault(int(fields[1]), []).append(pid)
        starts[pid] = fields[19]  # field 22 of proc(5): the start time
    return child_pids, starts


def descendants(roots: set[int]) -> Processes:
    """The live processes `roots` and every process under them, with their start times."""
    child_pids, starts = _table()
    found: Processes = {}
    todo = [pid for pid in roots if pid in starts]
    while todo:
        pid = todo.pop()
        if pid in found or pid not in starts:
            continue
        found[pid] = starts[pid]
        todo.extend(child_pids.get(pid, []))
    return found


def child_pids() -> set[int]:
    """This process's live children."""
    table, _ = _table()
    return set(table.get(os.getpid(), []))


def reap(noted: Processes) -> None:
    """SIGKILL every process of `noted` that is still the same process, and what it started
    since, until none is left."""
    for _ in range(_ROUNDS):
        _, starts = _table()
        alive = {pid for pid, start in noted.items() if starts.get(pid) == start}
        if not alive:
            return
        noted = {**noted, **descendants(alive)}
        for pid in noted:
            if starts.get(pid, noted[pid]) == noted[pid]:
                with suppress(OSError):  # gone already
                    os.kill(pid, signal.SIGKILL)
        time.sleep(0.25)


@contextmanager
def reaped() -> Iterator[Callable[[], None]]:
    """A reaper beside this process. Call what it yields right after starting the cluster; the
    reaper kills the children started since, and what runs under them, when the block ends or
    this process dies."""
    before = child_pids()
    reaper = subprocess.Popen(
        [sys.executable, "-I", __file__],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        start_new_session=True,
    )
    assert reaper.stdin is not None
    pipe = reaper.stdin

    def started() -> None:
        cluster = child_pids() - before - {reaper.pid}
        pipe.write("".join(f"{pid}\n" for pid in sorted(cluster)).encode())
        pipe.flush()

    try:
        yield started
    finally:
        pipe.close()  # the end the reaper waits for
        reaper.wait()


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    roots: set[int] = set()
    noted: Processes = {}
    received = b""
    stdin = sys.stdin.buffer.fileno()
    while True:
        ready, _, _ = select.select([stdin], [], [], _EVERY)
        if ready:
            data = os.read(stdin, 4096)
            if not data:  # the driver's end closed: it ended
                break
            received += data
            *lines, received = received.split(b"\n")
            roots.update(int(line) for line in lines if line)
        noted.update(descendants(roots))
    noted.update(descendants(roots))
    reap(noted)


if __name__ == "__main__":
    main()
