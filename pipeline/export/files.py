"""Creating many files beside the exporter: child processes take batches of files over a pipe.

A thread would not do: each open/write/close gives up the GIL to the thread building pages.
The child runs this file as a script, importing only the standard library; its protocol is
described above `_LENGTH`."""

from __future__ import annotations

import fcntl
import itertools
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

# The child's standard input: frames of an 8-byte little-endian length, then a payload of files
# as columns. The payload is a header (`_HEADER`), the files' int64 offsets into the bodies
# (files + 1 of them; the first need not be 0), the targets and the sources, each joined by NUL
# (an empty source: none), then the bodies back to back. A zero length ends.
# A file with a source is hard-linked to it; when that fails, its body is written, or the source
# copied when the body is empty. The child answers with one pickled dict on standard output:
# {"linked": files linked, "error": the first failure or None}.
_LENGTH = struct.Struct("<Q")
_HEADER = struct.Struct("<QQQ")  # files, bytes of targets, bytes of sources
_PIPE_BYTES = 1 << 20
_QUEUED_FRAMES = 64  # of about 2 MB each
FRAME_FILES = 1024  # files a frame
# File-creating children: one a core beside the exporter's own, up to 4. (On 2 cores a second
# child measured no faster: both cores are busy already.)
PROCESSES = min(max(1, (os.cpu_count() or 1) - 1), 4)
_ENDED = "the file-creating process ended unexpectedly"
Body = bytes | memoryview
Op = tuple[str, Body | None, str | None]  # target, bytes, file to hard-link from
Frame = tuple[list[str], list[Body], list[str | None]]  # ops as columns


class FileCreator:
    """The parent's side: `submit` queues a file, `close` waits for all of them.

    Frames go through a bounded queue to `processes` children, each fed by a thread of its
    own, so the exporter runs ahead while the children catch up. The children start with the
    first frame: fewer files than a frame are created by `close` in this process."""

    def __init__(self, batch: int = FRAME_FILES, processes: int = PROCESSES) -> None:
        self._batch_size = batch
        self._batch: Frame = ([], [], [])
        self._frames: queue.Queue[list[Body] | None] = queue.Queue(maxsize=_QUEUED_FRAMES)
        self._broken = False
        self._processes = processes
        self._children: list[subprocess.Popen[bytes]] = []
        self._feeders: list[threading.Thread] = []
        self._closed = False
        self.linked = 0

    def submit(self, op: Op) -> None:
        target, body, source = op
        targets, bodies, sources = self._batch
        targets.append(target)
        bodies.append(body or b"")
        sources.append(source)
        if len(targets) >= self._batch_size:
            self._send_batch()

    def submit_many(
        self, targets: list[str], offsets: memoryview, data: memoryview, sources: list[str | None]
    ) -> None:
        """Many files at once, their bodies as an Arrow binary column has them: `data` back to
        back, file i from `offsets[i]` to `offsets[i + 1]` (int64). Nothing is copied here:
        frames are slices of `data`, written to a child's pipe as they are."""
        if not self._children and len(self._batch[0]) + len(targets) < self._batch_size:
            for i, target in enumerate(targets):  # fewer than a frame yet: see `close`
                self.submit((target, data[offsets[i] : offsets[i + 1]], sources[i]))
            return
        if self._batch[0]:
            self._send_batch()
        for start in range(0, len(targets), self._batch_size):
            end = min(start + self._batch_size, len(targets))
            self._send(targets[start:end], offsets[start : end + 1], data, sources[start:end])

    def close(self) -> None:
        """Wait for every file; raise the first error of a child."""
        if self._closed:
            return
        self._closed = True
        if not self._children:
            try:
                self.linked = create(self._batch, Folders())
            except OSError as exc:
                raise OSError(_described(exc)) from exc
            return
        results: list[dict[str, Any]] = []
        try:
            if self._batch[0]:
                self._send_batch()
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

    def _send_batch(self) -> None:
        targets, bodies, sources = self._batch
        self._batch = ([], [], [])
        ends = itertools.accumulate(map(len, bodies), initial=0)
        offsets = memoryview(struct.pack(f"<{len(bodies) + 1}q", *ends)).cast("q")
        self._send(targets, offsets, memoryview(b"".join(bodies)), sources)

    def _send(
        self, targets: list[str], offsets: memoryview, data: memoryview, sources: list[str | None]
    ) -> None:
        if self._broken:
            raise OSError(_ENDED)
        if not self._children:
            self._start_children()
        names = "\0".join(targets).encode()
        links = "\0".join(source or "" for source in sources).encode()
        body = data[offsets[0] : offsets[-1]]
        size = _HEADER.size + offsets.nbytes + len(names) + len(links) + body.nbytes
        header = _LENGTH.pack(size) + _HEADER.pack(len(targets), len(names), len(links))
        self._frames.put([header, offsets, names, links, body])

    def _start_children(self) -> None:
        for _ in range(self._processes):
            child = subprocess.Popen(
                [sys.executable, "-I", __file__], stdin=subprocess.PIPE, stdout=subprocess.PIPE
            )
            self._children.append(child)
            assert child.stdin is not None
            with suppress(OSError):  # fewer, larger hand-overs; the default 64 KiB also works
                fcntl.fcntl(child.stdin.fileno(), fcntl.F_SETPIPE_SZ, _PIPE_BYTES)
            feeder = threading.Thread(
                target=self._feed, args=(child.stdin,), name="file-feeder", daemon=True
            )
            feeder.start()
            self._feeders.append(feeder)

    def _feed(self, stdin: IO[bytes]) -> None:
        while (frame := self._frames.get()) is not None:
            if not self._broken:
                try:
                    for piece in frame:  # large pieces go to the pipe without a copy
                        stdin.write(piece)
                except OSError:  # a child is gone: the next submit or close says so
                    self._broken = True
        with suppress(OSError):
            stdin.write(_LENGTH.pack(0))
            stdin.close()


class Folders:
    """The folder that files are being created in, held open: a file is created by its name in
    it (openat), so the kernel does not walk the whole path again for each file (about 0.5-1 µs
    of the 9-12 µs a small file costs here). Files come folder by folder, so one open folder
    is enough. Folders are made when first met."""

    def __init__(self) -> None:
        self._made: set[str] = set()
        self._path: str | None = None
        self._fd = -1

    def open(self, folder: str) -> int:
        """A descriptor of `folder`, made if missing; valid until the next call or `close`."""
        if folder != self._path:
            self.close()
            if folder not in self._made:
                os.makedirs(folder, exist_ok=True)
                self._made.add(folder)
            self._fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            self._path = folder
        return self._fd

    def close(self) -> None:
        if self._path is not None:
            os.close(self._fd)
            self._path, self._fd = None, -1


def create(frame: Frame, folders: Folders) -> int:
    """Create the files of one frame; returns how many were hard links. An error names the
    file's whole path."""
    linked = 0
    target = ""
    try:
        for target, body, source in zip(*frame, strict=True):
            folder, _, name = target.rpartition("/")
            fd = folders.open(folder or ".")
            if source is not None:
                try:
                    os.link(source, name, dst_dir_fd=fd)
                    linked += 1
                    continue
                except OSError:  # gone, or another file system
                    if not body:
                        shutil.copyfile(source, target)
                        continue
            write_new(name, body, fd)
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, target) from exc
    return linked


def _described(exc: OSError) -> str:
    """A failure to create a file, as `close` raises it: the file's path, then the problem."""
    return f"{exc.filename or ''}: {exc.strerror or exc}"


def decode(payload: bytes) -> Frame:
    """The files of one frame's payload (its layout is described above `_LENGTH`)."""
    count, names_size, links_size = _HEADER.unpack_from(payload)
    view = memoryview(payload)
    start = _HEADER.size + 8 * (count + 1)
    offsets = view[_HEADER.size : start].cast("q")
    targets = payload[start : start + names_size].decode().split("\0")
    start += names_size
    links = payload[start : start + links_size].decode().split("\0")
    data = view[start + links_size :]
    first = offsets[0]
    bodies: list[Body] = [data[a - first : b - first] for a, b in itertools.pairwise(offsets)]
    return targets, bodies, [source or None for source in links]


_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC


def write_new(name: str, body: Body, folder: int) -> None:
    """Create `name` in the open folder `folder` with `body`: three system calls, where `open()`
    makes five (it also asks for the block size and whether the file is a terminal). O_EXCL:
    never open an existing file, which could be a hard link into a published release."""
    fd = os.open(name, _NEW, 0o644, dir_fd=folder)
    try:
        written = os.write(fd, body)
        while written < len(body):  # a regular file takes it whole; a short write goes on
            written += os.write(fd, body[written:])
    finally:
        os.close(fd)


def _serve(stdin: BinaryIO, stdout: BinaryIO) -> None:
    folders = Folders()
    linked, error = 0, None
    while (header := stdin.read(_LENGTH.size)) and (size := _LENGTH.unpack(header)[0]):
        payload = stdin.read(size)
        if error is None:  # after a failure, read on so that the parent never blocks
            try:
                linked += create(decode(payload), folders)
            except OSError as exc:
                error = _described(exc)
    folders.close()
    pickle.dump({"linked": linked, "error": error}, stdout)
    stdout.flush()


if __name__ == "__main__":
    _serve(sys.stdin.buffer, sys.stdout.buffer)
