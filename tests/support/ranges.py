"""Byte ranges as real HTTP clients ask for them: the Range headers the servers must read alike,
a TCP port piped to a server's unix-domain socket (polars and aiohttp speak TCP only), and the
bulk files read from their URLs by polars and by pyarrow through fsspec."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import fsspec
import polars as pl
import pyarrow.parquet as pq
from polars.testing import assert_frame_equal


def range_headers(length: int) -> list[str]:
    """Range headers for a body of `length` bytes: one range in each spelling nginx reads, past
    the end, several, and what nginx cannot read or declines."""
    return [
        "bytes=0-9",
        "bytes=0-0",
        "bytes=5-",
        "bytes=-5",
        f"bytes=-{length + 10}",
        f"bytes={length - 1}-",
        f"bytes=3-{length + 100}",
        "BYTES=0-3",
        "bytes= 2 - 5 ",
        "bytes=0-3,",
        f"bytes={length}-",
        f"bytes={length + 5}-{length + 9}",
        "bytes=-0",
        "bytes=5-2",
        "bytes=0-1,4-5",
        "bytes=0-1,0-1",
        f"bytes=0-1,{length + 5}-",
        "bytes=x",
        "bytes=1-x",
        "bytes=,0-1",
        "bytes=99999999999999999999-",
        "items=0-1",
        "bytes=",
    ]


@contextmanager
def tcp_to(sock: Path) -> Iterator[int]:
    """A port on 127.0.0.1 (the system's pick, reported) whose connections are piped, byte for
    byte, to the unix-domain socket `sock`: the server behind answers every request."""
    listener = socket.create_server(("127.0.0.1", 0))

    def pipe(source: socket.socket, target: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                target.sendall(data)
            target.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    def connect(client: socket.socket) -> None:
        with client, socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
            server.connect(str(sock))
            back = threading.Thread(target=pipe, args=(server, client), daemon=True)
            back.start()
            pipe(client, server)
            back.join()

    def accept() -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:  # the listener was shut down
                return
            threading.Thread(target=connect, args=(client,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield listener.getsockname()[1]
    finally:
        listener.shutdown(socket.SHUT_RDWR)
        listener.close()


def assert_libraries_read(base: str, site: Path, csv: str, parquet: str) -> None:
    """polars (`read_csv`, `read_parquet`, `scan_parquet`, by ranges) and pyarrow through
    fsspec's HTTP file system (aiohttp) read the bulk files at `base` + their targets as they
    read the files of `site`."""
    csv_file, parquet_file = site / csv.lstrip("/"), site / parquet.lstrip("/")
    assert_frame_equal(pl.read_csv(base + csv), pl.read_csv(csv_file))
    assert_frame_equal(pl.read_parquet(base + parquet), pl.read_parquet(parquet_file))
    assert_frame_equal(pl.scan_parquet(base + parquet).collect(), pl.read_parquet(parquet_file))
    http = fsspec.filesystem("http", skip_instance_cache=True)
    table = pq.read_table(base + parquet, filesystem=http)
    assert table.equals(pq.read_table(parquet_file))
