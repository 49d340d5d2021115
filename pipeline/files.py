"""Creating many files on a second core: a child process that takes batches of files over a
pipe and creates them, while the exporter builds the next pages.

A thread would not do: each open/write/close gives up the GIL and must win it back from the
thread building pages, and measured slower than writing in line. The child runs this file as a
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
from typing import Any, BinaryIO

_LENGTH = struct.Struct("<I")
_PIPE_BYTES = 1 << 20
_QUEUED_FRAMES = 64  # of about 2 MB each
FRAME_FILES = 1024  # files a frame
_ENDED = "the file-creating process ended unexpectedly"
Op = tuple[str, bytes | None, str | None]  # target, bytes, file to hard-link from
Frame = tuple[list[str], list[bytes | None], list[str | None]]  # ops as columns


class FileCreator:
    """The parent's side: `submit` queues a file, `close` waits for all of them.

    Frames go to the child from a feeder thread, through a queue of up to `_QUEUED_FRAMES`: the
    exporter runs ahead while the child catches up (and the child keeps creating files while
    DuckDB answers the exporter's next batch). The feeder makes one system call a frame of
    `batch` files, so it rarely waits for the GIL."""

    def __init__(self, batch: int = FRAME_FILES) -> None:
        self._batch_size = batch
        self._batch: Frame = ([], [], [])
        self._child = subprocess.Popen(
            [sys.executable, "-I", __file__], stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )
        assert self._child.stdin is not None and self._child.stdout is not None
        self._stdin, self._stdout = self._child.stdin, self._child.stdout
        with suppress(OSError):  # fewer, larger hand-overs; the default 64 KiB also works
            fcntl.fcntl(self._stdin.fileno(), fcntl.F_SETPIPE_SZ, _PIPE_BYTES)
        self._frames: queue.Queue[bytes | None] = queue.Queue(maxsize=_QUEUED_FRAMES)
        self._broken = False
        self._feeder = threading.Thread(target=self._feed, name="file-feeder", daemon=True)
        self._feeder.start()
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
        """Wait for every file; raise the child's first error."""
        if self._child.returncode is not None:
            return
        try:
            if self._batch[0]:
                self._send()
            self._frames.put(None)
            self._feeder.join()
            result: dict[str, Any] = pickle.load(self._stdout)
        except (OSError, EOFError):
            result = {"linked": 0, "error": _ENDED}
        finally:
            self._child.wait()
        self.linked = result["linked"]
        if result["error"]:
            raise OSError(result["error"])

    def abort(self) -> None:
        """Stop without waiting for the files (the build failed anyway)."""
        if self._child.returncode is None:
            self._child.kill()
            self._child.wait()
            self._frames.put(None)  # the feeder drains what is left and ends

    def _send(self) -> None:
        if self._broken:
            raise OSError(_ENDED)
        data = pickle.dumps(self._batch, protocol=pickle.HIGHEST_PROTOCOL)
        self._batch = ([], [], [])
        self._frames.put(_LENGTH.pack(len(data)) + data)

    def _feed(self) -> None:
        while (frame := self._frames.get()) is not None:
            if not self._broken:
                try:
                    self._stdin.write(frame)
                except OSError:  # the child is gone: the next submit or close says so
                    self._broken = True
        with suppress(OSError):
            self._stdin.write(_LENGTH.pack(0))
            self._stdin.close()


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
