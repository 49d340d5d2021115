"""`make bench`'s live figures: `pipeline serve` answering a request no build materialises
(`sort=name`), from the warehouse, over keep-alive connections.

For the smallest, the median and the largest store (by listings for sale on channel 0): the
median and 95th percentile of the request's time, seen by a client on one connection; then
requests per second with 1, 2 and 4 clients at once, each on its own connection, spread over
the three stores. The client is Python on the same machine: on few cores it takes a share of
them, so the throughput is a floor of what the server does."""

from __future__ import annotations

import http.client
import os
import re
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import duckdb

from pipeline.paths import CURRENT, WAREHOUSE

# A combination of parameters no build materialises by default (see `export.variants`).
QUERY = "sort=name"
LISTENING = re.compile(r"serving .+ on http://127\.0\.0\.1:(?P<port>[0-9]+)/")


def stores(output: Path) -> dict[str, tuple[str, int]]:
    """The smallest, median and largest store by listings for sale on channel 0."""
    con = duckdb.connect(str(output / CURRENT / WAREHOUSE), read_only=True)
    try:
        rows = con.execute(
            "SELECT store_key, count(*) AS n FROM marts.listing "
            "WHERE channel_id = 0 AND quantity > 0 GROUP BY store_key ORDER BY n, store_key"
        ).fetchall()
    finally:
        con.close()
    return {"smallest": rows[0], "median": rows[len(rows) // 2], "largest": rows[-1]}


def _target(key: str) -> str:
    return f"/v1.39.0/stores/{key}/inventory/products?{QUERY}"


def _get(conn: http.client.HTTPConnection, target: str) -> None:
    conn.request("GET", target)
    response = conn.getresponse()
    response.read()
    if response.status != 200:
        raise RuntimeError(f"{target}: HTTP {response.status}")


def latencies(port: int, target: str, count: int) -> list[float]:
    """Seconds of `count` requests one after the other on one keep-alive connection, after a
    few to warm up (the warehouse opens, the thread's cursor is made)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        for _ in range(5):
            _get(conn, target)
        times = []
        for _ in range(count):
            started = time.perf_counter()
            _get(conn, target)
            times.append(time.perf_counter() - started)
        return times
    finally:
        conn.close()


def throughput(port: int, targets: list[str], clients: int, seconds: float) -> float:
    """Requests per second of `clients` threads, each on its own keep-alive connection."""
    done = [0] * clients
    stop = time.perf_counter() + seconds

    def client(index: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        try:
            while time.perf_counter() < stop:
                _get(conn, targets[done[index] % len(targets)])
                done[index] += 1
        finally:
            conn.close()

    started = time.perf_counter()
    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sum(done) / (time.perf_counter() - started)


def live_latency(output: Path, count: int = 200, seconds: float = 5.0) -> dict[str, Any]:
    """The live figures of the build published in `output` (see the module's docstring)."""
    picked = stores(output)
    command = [sys.executable, "-m", "pipeline", "serve", "--output", str(output), "--port", "0"]
    server = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env=dict(os.environ))
    try:
        assert server.stderr is not None
        port = None
        for line in server.stderr:
            found = LISTENING.search(line)
            if found:
                port = int(found["port"])
                break
        if port is None:
            raise RuntimeError(f"pipeline serve exited ({server.wait()})")
        threading.Thread(target=server.stderr.read, daemon=True).start()  # never a full pipe
        figures: dict[str, Any] = {"live_query": QUERY}
        for name, (key, listings) in picked.items():
            times = sorted(latencies(port, _target(key), count))
            figures[f"live_{name}_store_listings"] = listings
            figures[f"live_{name}_p50_ms"] = round(statistics.median(times) * 1000, 2)
            figures[f"live_{name}_p95_ms"] = round(times[int(len(times) * 0.95) - 1] * 1000, 2)
        targets = [_target(key) for key, _ in picked.values()]
        for clients in (1, 2, 4):
            rate = throughput(port, targets, clients, seconds)
            figures[f"live_requests_per_second_{clients}_clients"] = round(rate, 1)
        return figures
    finally:
        server.terminate()
        server.wait(10)
