"""`make bench`'s figures of the HTTP around the bytes, through nginx on the generated
configuration (`pipeline serve` its upstream):

- the bytes sent (status line, headers and body, as received) for one store's first 10 pages of
  its default summary: plain, gzip, and a night later with the first night's validators
  (If-None-Match: 304 where the page did not change);
- requests per second with 4 clients: files, live answers asked once (each URL new: nginx's
  cache misses), and the same live answers asked again (from nginx's cache);
- gzip on the fly against precompressed files: nginx's CPU per request plain and gzip, and what
  precompressing every page would add to a build (seconds on one core, files, bytes).

    python -m bench.transfer --output OUTPUT [--input CHANGED_INPUT]

With `--input`, the "night later" is a build of that input into OUTPUT; without, the same build.
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import os
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.live import ORDERS, stores
from bench.servers import UnixHTTPConnection, cpu_seconds, nginx_in_front, requests_for, serving
from pipeline.api.http import GZIP_LEVEL
from pipeline.build import build
from pipeline.paths import CURRENT, SITE
from pipeline.settings import load_settings

CLIENTS = 4
PAGES = 10
# Spellings of each live answer: a parameter the API ignores (`n`), so that every URL is new to
# nginx's cache while the answers are pages of 10, the size of the files they are compared with.
SPELLINGS = range(40)


@dataclass(frozen=True)
class FirstNight:
    """One store's default pages as the first night sent them: their URLs and ETags."""

    store: str
    targets: list[str]
    etags: list[str]


def wire_bytes(sock: Path, target: str, headers: dict[str, str] | None = None) -> tuple[int, str]:
    """Every byte nginx sends for one GET (on a connection closed after it), and its status
    line."""
    lines = [f"GET {target} HTTP/1.1", "Host: localhost", "Connection: close"]
    lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.connect(str(sock))
        conn.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        received = b"".join(iter(lambda: conn.recv(65536), b""))
    return len(received), received.split(b"\r\n", 1)[0].decode()


def default_pages(output: Path, store: str) -> list[str]:
    """The store's first `PAGES` pages of its default summary that are files."""
    site = (output / CURRENT / SITE).resolve()
    folder = site / "v1.39.0" / "stores" / store / "inventory" / "products"
    names = ["index", *(f"offset={10 * page}" for page in range(1, PAGES))]
    pages = [name for name in names if (folder / f"{name}.json").is_file()]
    base = f"/v1.39.0/stores/{store}/inventory/products"
    return [base if name == "index" else f"{base}?{name}" for name in pages]


def etag_of(sock: Path, target: str) -> str:
    conn = UnixHTTPConnection(sock, timeout=60)
    try:
        conn.request("GET", target)
        response = conn.getresponse()
        response.read()
        return response.getheader("ETag") or ""
    finally:
        conn.close()


@contextmanager
def in_front(output: Path) -> Iterator[Path]:
    """`pipeline serve` on the build, and nginx in front of it: nginx's socket."""
    with serving(output) as (port, _), nginx_in_front(output, port) as sock:
        yield sock


def first_night(output: Path, sock: Path) -> tuple[FirstNight, dict[str, Any]]:
    """The median store's pages through nginx at `sock`, plain and gzip: their bytes on the
    wire, and their ETags."""
    store = stores(output)["median"][0]
    targets = default_pages(output, store)
    plain = sum(wire_bytes(sock, t)[0] for t in targets)
    zipped = sum(wire_bytes(sock, t, {"Accept-Encoding": "gzip"})[0] for t in targets)
    etags = [etag_of(sock, t) for t in targets]
    figures = {
        "http_pages": len(targets),
        "http_pages_bytes_plain": plain,
        "http_pages_bytes_gzip": zipped,
    }
    return FirstNight(store, targets, etags), figures


def night_later(sock: Path, night: FirstNight) -> dict[str, Any]:
    """The same pages a night later through nginx at `sock`, each asked with last night's ETag."""
    sent = [
        wire_bytes(sock, t, {"Accept-Encoding": "gzip", "If-None-Match": e})
        for t, e in zip(night.targets, night.etags, strict=True)
    ]
    return {
        "http_pages_bytes_night_later_validators": sum(n for n, _ in sent),
        "http_pages_304_night_later": sum(" 304 " in f"{line} " for _, line in sent),
    }


def live_targets(output: Path) -> list[str]:
    """Summary combinations no build materialises, each URL once: the smallest and median
    stores, three orders, 10 pages, 40 spellings."""
    picked = stores(output)
    return [
        f"/v1.39.0/stores/{key}/inventory/products?{order}&offset={10 * page}&n={n}"
        for (key, _), order, page, n in itertools.product(
            (picked["smallest"], picked["median"]), ORDERS, range(PAGES), SPELLINGS
        )
    ]


def once(sock: Path, targets: list[str], clients: int) -> float:
    """Requests per second of `clients` keep-alive connections sharing `targets`, each once."""
    pending = iter(targets)
    lock = threading.Lock()

    def client() -> None:
        conn = UnixHTTPConnection(sock, timeout=120)
        try:
            while True:
                with lock:
                    target = next(pending, None)
                if target is None:
                    return
                conn.request("GET", target)
                conn.getresponse().read()
        finally:
            conn.close()

    started = time.perf_counter()
    threads = [threading.Thread(target=client) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return len(targets) / (time.perf_counter() - started)


def rates(output: Path, sock: Path, seconds: float) -> dict[str, Any]:
    """Requests per second through nginx at `sock`: files, live answers once, live answers
    again; and nginx's CPU per file request, plain and gzip."""
    files = [t for key, _ in stores(output).values() for t in default_pages(output, key)]
    live = live_targets(output)

    def connect() -> UnixHTTPConnection:
        return UnixHTTPConnection(sock, timeout=120)

    nginx = int((sock.parent / "nginx.pid").read_text())
    figures: dict[str, Any] = {"http_live_targets": len(live)}
    for name, headers in (("plain", {}), ("gzip", {"Accept-Encoding": "gzip"})):
        cpu = cpu_seconds(nginx)
        rate, done = _files_rate(connect, files, seconds, headers)
        figures[f"http_files_requests_per_second_{name}"] = round(rate, 1)
        figures[f"http_nginx_cpu_us_per_file_{name}"] = round(
            (cpu_seconds(nginx) - cpu) * 1e6 / max(done, 1), 1
        )
    figures["http_live_once_requests_per_second"] = round(once(sock, live, CLIENTS), 1)
    figures["http_live_again_requests_per_second"] = round(once(sock, live, CLIENTS), 1)
    figures["http_live_again_to_files"] = round(
        figures["http_files_requests_per_second_plain"]
        / figures["http_live_again_requests_per_second"],
        2,
    )
    return figures


def _files_rate(
    connect: Any, files: list[str], seconds: float, headers: dict[str, str]
) -> tuple[float, int]:
    """(requests per second, requests) of `CLIENTS` clients over the files, with `headers`."""
    done, elapsed = requests_for(connect, files, CLIENTS, seconds, headers)
    return done / elapsed, done


def precompressed(output: Path) -> dict[str, Any]:
    """What gzip_static would cost a build: every page compressed (nginx's level, and 9), one
    core, in memory (the files' writing is not counted)."""
    site = (output / CURRENT / SITE).resolve()
    pages = [  # a store's folder is a link into the build's pool: followed
        Path(folder, name)
        for folder, _, names in os.walk(site, followlinks=True)
        for name in names
        if name.endswith((".json", ".html"))
    ]
    figures: dict[str, Any] = {"http_precompressed_files": len(pages)}
    raw = sum(p.stat().st_size for p in pages)
    figures["http_site_bytes"] = raw
    for level in (GZIP_LEVEL, 9):
        started, compressed = time.perf_counter(), 0
        for page in pages:
            compressed += len(gzip.compress(page.read_bytes(), level, mtime=0))
        figures[f"http_precompress_level{level}_seconds"] = round(time.perf_counter() - started, 2)
        figures[f"http_precompressed_level{level}_bytes"] = compressed
    return figures


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(
        prog="python -m bench.transfer",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--output", type=Path, required=True, help="a build's output directory")
    parser.add_argument("--input", type=Path, help="the input of the night later")
    parser.add_argument("--seconds", type=float, default=5.0, help="seconds per files figure")
    args = parser.parse_args(argv)
    with in_front(args.output) as sock:  # one server and one nginx for both
        night, figures = first_night(args.output, sock)
        figures |= rates(args.output, sock, args.seconds)
    figures |= precompressed(args.output)
    if args.input is not None:
        build(load_settings(None, input=args.input, output=args.output))
    with in_front(args.output) as sock:  # on the night's release
        figures |= night_later(sock, night)
    for name, value in figures.items():
        print(f"{name:<45} {value}")
    return figures


if __name__ == "__main__":
    main()
