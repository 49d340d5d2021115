"""Creating many files beside the exporter: child processes that take batches of files over a
pipe and create them, while the exporter builds the next pages. Creating a small file is about
8 µs of CPU in the kernel on this kind of machine: one child a core beside the exporter's.

A thread would not do: each open/write/close gives up the GIL and must win it back from the
thread building pages, and measured slower than writing in line. A child runs this file as a
script, so it starts in milliseconds and imports nothing but the standard library.

Protocol on the child's standard input: frames of a 4-byte little-endian length and a pickled
tuple of three lists of the same length, (targets, bodies, sources); a zero length ends. A
source set: hard-link the target to it, or, when that fails and the body is None, copy it. The
child answers with one pickled dict on standard output: {"linked": files linked, "error": the
first failure or None}.
"""

from __future__ import annotations

import fcntl
import os
import pickle
import queue
import shutil
import struct
import subprocess
import sys
import threading
from contextlib import suppress
from typing import IO, Any, BinaryIO

_LENGTH = struct.Struct("<I")
_PIPE_BYTES = 1 << 20
_QUEUED_FRAMES = 64  # of about 2 MB each
FRAME_FILES = 1024  # files a frame
# File-creating children: one a core beside the exporter's own, up to 4. (On 2 cores a second
# child measured no faster: both cores are busy already.)
PROCESSES = min(max(1, (os.cpu_count() or 1) - 1), 4)
_ENDED = "the file-creating process ended unexpectedly"
Op = tuple[str, bytes | None, str | None]  # target, bytes, file to hard-link from
Frame = tuple[list[str], list[bytes | None], list[str | None]]  # ops as columns


class FileCreator:
    """The parent's side: `submit` queues a file, `close` waits for all of them.

    Frames go through a queue of up to `_QUEUED_FRAMES` to `processes` children, each fed by a
    thread of its own: the exporter runs ahead while the children catch up (and they keep
    creating files while DuckDB answers the exporter's next batch). Whichever child is free
    takes the next frame; frames never depend on each other (a link's source is a finished
    file of another release). A feeder makes one system call a frame of `batch` files, so it
    rarely waits for the GIL."""

    def __init__(self, batch: int = FRAME_FILES, processes: int = PROCESSES) -> None:
        self._batch_size = batch
        self._batch: Frame = ([], [], [])
        self._frames: queue.Queue[bytes | None] = queue.Queue(maxsize=_QUEUED_FRAMES)
        self._broken = False
        self._children = [
            subprocess.Popen(
                [sys.executable, "-I", __file__], stdin=subprocess.PIPE, stdout=subprocess.PIPE
            )
            for _ in range(processes)
        ]
        self._feeders = []
        for child in self._children:
            assert child.stdin is not None
            with suppress(OSError):  # fewer, larger hand-overs; the default 64 KiB also works
                fcntl.fcntl(child.stdin.fileno(), fcntl.F_SETPIPE_SZ, _PIPE_BYTES)
            feeder = threading.Thread(
                target=self._feed, args=(child.stdin,), name="file-feeder", daemon=True
            )
            feeder.start()
            self._feeders.append(feeder)
        self._closed = False
        self.linked = 0

    def submit(self, op: Op) -> None:
        for column, value in zip(self._batch, op, strict=True):
            column.append(value)  # type: ignore[attr-defined]
        if len(self._batch[0]) >= self._batch_size:
            self._send()

    def submit_many(
        self, targets: list[str], bodies: list[bytes | None], sources: list[str | None]
    ) -> None:
        """Many files at once: what `submit` does for each, without a tuple a file."""
        if self._batch[0]:
            self._send()
        size = self._batch_size
        for start in range(0, len(targets), size):
            end = start + size
            self._batch = (targets[start:end], bodies[start:end], sources[start:end])
            self._send()

    def close(self) -> None:
        """Wait for every file; raise the first error of a child."""
        if self._closed:
            return
        self._closed = True
        results: list[dict[str, Any]] = []
        try:
            if self._batch[0]:
                self._send()
        finally:
            for _ in self._feeders:
                self._frames.put(None)
            for feeder in self._feeders:
                feeder.join()
            for child in self._children:
                try:
                    assert child.stdout is not None
                    results.append(pickle.load(child.stdout))
                except (OSError, EOFError):
                    results.append({"linked": 0, "error": _ENDED})
                finally:
                    child.wait()
        self.linked = sum(result["linked"] for result in results)
        errors = [result["error"] for result in results if result["error"]]
        if errors:
            raise OSError(errors[0])

    def abort(self) -> None:
        """Stop without waiting for the files (the build failed anyway)."""
        if self._closed:
            return
        self._closed = True
        for child in self._children:
            child.kill()
            child.wait()
        for _ in self._feeders:
            self._frames.put(None)  # the feeders drain what is left and end

    def _send(self) -> None:
        if self._broken:
            raise OSError(_ENDED)
        data = pickle.dumps(self._batch, protocol=pickle.HIGHEST_PROTOCOL)
        self._batch = ([], [], [])
        self._frames.put(_LENGTH.pack(len(data)) + data)

    def _feed(self, stdin: IO[bytes]) -> None:
        while (frame := self._frames.get()) is not None:
            if not self._broken:
                try:
                    stdin.write(frame)
                except OSError:  # a child is gone: the next submit or close says so
                    self._broken = True
        with suppress(OSError):
            stdin.write(_LENGTH.pack(0))
            stdin.close()


def create(frame: Frame, made: set[str]) -> int:
    """Create the files of one frame; returns how many were hard links."""
    linked = 0
    for target, body, source in zip(*frame, strict=True):
        folder = target.rpartition("/")[0]
        if folder not in made:
            os.makedirs(folder, exist_ok=True)
            made.add(folder)
        if source is not None:
            try:
                os.link(source, target)
                linked += 1
                continue
            except OSError:  # gone, or another file system
                if body is None:
                    shutil.copyfile(source, target)
                    continue
        write_new(target, body or b"")
    return linked


_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC


def write_new(path: str, body: bytes) -> None:
    """Create `path` with `body`: three system calls, where `open()` makes five (it also asks
    for the block size and whether the file is a terminal). O_EXCL: never open an existing file,
    which could be a hard link into a published release."""
    fd = os.open(path, _NEW, 0o644)
    try:
        written = os.write(fd, body)
        while written < len(body):  # a regular file takes it whole; a short write goes on
            written += os.write(fd, body[written:])
    finally:
        os.close(fd)


def _serve(stdin: BinaryIO, stdout: BinaryIO) -> None:
    made: set[str] = set()
    linked, error = 0, None
    while (header := stdin.read(_LENGTH.size)) and (size := _LENGTH.unpack(header)[0]):
        frame: Frame = pickle.loads(stdin.read(size))
        if error is None:  # after a failure, read on so that the parent never blocks
            try:
                linked += create(frame, made)
            except OSError as exc:
                error = f"{exc.filename or ''}: {exc.strerror or exc}"
    pickle.dump({"linked": linked, "error": error}, stdout)
    stdout.flush()


if __name__ == "__main__":
    _serve(sys.stdin.buffer, sys.stdout.buffer)
