"""`make bench`'s live figures: `pipeline serve` answering what no build materialises, from the
warehouse, over keep-alive connections; each figure beside its target.

    python -m bench.live --output OUTPUT   # on an existing build, no rebuild

The stores are the smallest, the median and the largest by listings for sale on channel 0. For
each: the summary in orders no build materialises (`sort=name`, `sort=name desc`, `sort=price`),
each request another combination (the three orders times the first ten pages, in turn), median
and 95th percentile of its time on one keep-alive connection. For the median store's twenty
products with the most entries, in turn: their `skus` and `quantity`; the largest store's
`skuprices`, its first ten pages in turn; the median store's categories and groups with
`includeExcludedCategories=true` (not materialised). Then requests per second with 1, 4 and 16
clients, each on its own keep-alive connection, over the smallest and the median store's
summaries, and the server's CPU per request at 4 clients.

Twice: `live_uncached_*` with no answer kept (`serve.cache_mb = 0`: every request runs its SQL),
then `live_*` as deployed (`pipeline.serve.cache`): a summary page is cut from the store's kept
products, so every combination of a store after its first request costs a cut; another
operation's page is a slice of its combination's whole answer (a product's `skus` asked again is
then a slice). `live_*_first_ms` is a store's first summary request after a release (its
products asked for and kept). As deployed, the throughput is measured through nginx too (the
generated configuration, the server its upstream), and the server's resident memory (now and
its peak). The client is Python on the same machine: on few cores it takes a share of them, so
the throughput is a floor of what the server does.
"""

from __future__ import annotations

import argparse
import http.client
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from bench.catalog import catalog_targets, largest_group_prices, largest_manifest, search_targets
from bench.servers import (
    Connect,
    Request,
    UnixHTTPConnection,
    cpu_seconds,
    first_request,
    latencies,
    nginx_in_front,
    percentiles,
    rss_mb,
    serving,
    throughput,
    warehouse,
)

# Orders no build materialises by default (see `export.variants`), each over its first pages.
ORDERS = ("sort=name", "sort=name%20desc", "sort=price")
PAGES = 10
PRODUCTS = 20
# The store lists' combination that is not materialised: the live path answers it.
LIST_QUERY = "includeExcludedCategories=true"
CLIENTS = (1, 4, 16)
# The targets (10M listings / 2,000 stores, 2 cores): milliseconds at the median, except
# where the name says otherwise. p95 figures are held to twice their p50.
TARGETS: dict[str, float] = {
    "live_smallest_p50_ms": 3,
    "live_median_p50_ms": 10,
    "live_largest_p50_ms": 60,
    "live_skus_p50_ms": 3,
    "live_quantity_p50_ms": 3,
    "live_skuprices_largest_p50_ms": 10,
    "live_requests_per_second_4_clients": 300,
    "live_serve_rss_mb": 2048,
    # The catalog and price operations (docs/contract.md §7): lists of 50 ids, a filtered page of
    # products, and the largest group's prices answered from the warehouse (not its page).
    "live_pricing_sku_50_p50_ms": 5,
    "live_pricing_product_50_p50_ms": 5,
    "live_catalog_products_50_p50_ms": 5,
    "live_catalog_products_filtered_p50_ms": 5,
    "live_pricing_group_largest_p50_ms": 20,
    # The searches (docs/contract.md §12): the largest category's products found by a name, the
    # largest store's search in its largest category, the largest category's manifest answered
    # from the warehouse (not its page).
    "live_catalog_search_named_p50_ms": 10,
    "live_store_search_largest_p50_ms": 20,
    "live_manifest_largest_p50_ms": 5,
}

AT_LEAST = ("live_requests_per_second_4_clients",)


def stores(output: Path) -> dict[str, tuple[str, int]]:
    """The smallest, median and largest store by listings for sale on channel 0."""
    with warehouse(output) as con:
        rows = con.execute(
            "SELECT store_key, count(*) AS n FROM marts.listing "
            "WHERE channel_id = 0 AND quantity > 0 GROUP BY store_key ORDER BY n, store_key"
        ).fetchall()
    return {"smallest": rows[0], "median": rows[len(rows) // 2], "largest": rows[-1]}


def busiest_products(output: Path, store_key: str, count: int) -> list[int]:
    """The store's `count` products with the most entries for sale on channel 0 (then the
    lowest ids)."""
    with warehouse(output) as con:
        rows = con.execute(
            "SELECT product_id FROM marts.listing WHERE store_key = ? AND channel_id = 0 "
            "AND quantity > 0 GROUP BY product_id ORDER BY count(*) DESC, product_id LIMIT ?",
            [store_key, count],
        ).fetchall()
    assert rows, f"{store_key}: no listing for sale"
    return [int(row[0]) for row in rows]


def summary_pages(output: Path, store_key: str) -> list[str]:
    """The store's summary in each of `ORDERS`, its first `PAGES` pages (fewer where it has
    fewer), order after order: every one another combination, and every one a page that exists."""
    with warehouse(output) as con:
        rows = con.execute(
            "SELECT count(DISTINCT product_id) FROM marts.listing WHERE store_key = ? "
            "AND channel_id = 0 AND quantity > 0 AND NOT is_excluded_category",
            [store_key],
        ).fetchall()
    pages = max(1, min(PAGES, (int(rows[0][0]) + 9) // 10))
    return [
        _store(store_key, f"products?{order}&offset={10 * page}")
        for page in range(pages)
        for order in ORDERS
    ]


def _store(key: str, rest: str) -> str:
    return f"/v1.39.0/stores/{key}/inventory/{rest}"


def live_latency(output: Path, count: int = 200, seconds: float = 5.0) -> dict[str, Any]:
    """The live figures of the build published in `output` (see the module's docstring)."""
    picked = stores(output)
    median_key, largest_key = picked["median"][0], picked["largest"][0]
    products = busiest_products(output, median_key, PRODUCTS)
    summaries = {name: summary_pages(output, key) for name, (key, _) in picked.items()}
    targets: dict[str, Sequence[Request]] = {
        **summaries,
        "skus": [_store(median_key, f"products/{p}/skus") for p in products],
        "quantity": [_store(median_key, f"products/{p}/quantity") for p in products],
        "skuprices_largest": [
            _store(largest_key, f"skuprices?offset={10 * page}") for page in range(PAGES)
        ],
        "categories": [_store(median_key, f"categories?{LIST_QUERY}")],
        "groups": [_store(median_key, f"groups?{LIST_QUERY}")],
        **catalog_targets(output, PAGES),
        **search_targets(output, largest_key, PAGES),
    }
    mixed = [*summaries["smallest"], *summaries["median"]]
    figures: dict[str, Any] = {"live_orders": ",".join(ORDERS), "live_load_average": _load()}
    for name, (_, listings) in picked.items():
        figures[f"live_{name}_store_listings"] = listings
    # Every answer computed: no answer kept whole (serve.cache_mb = 0).
    with serving(output, {"PIPELINE_SERVE__CACHE_MB": "0"}) as (port, pid):
        direct = _direct(port)
        figures |= _latencies(direct, targets, count, "live_uncached")
        figures |= _throughputs(direct, mixed, seconds, pid, "live_uncached")
    # As deployed: a store's summary products kept, a page a cut (`pipeline.serve.cache`).
    with serving(output) as (port, pid):
        direct = _direct(port)
        for name in picked:  # after a live answer of another kind: the warehouse is open
            first = first_request(
                direct, _store(median_key, f"groups?{LIST_QUERY}"), summaries[name][0]
            )
            figures[f"live_{name}_first_ms"] = first
        figures |= _latencies(direct, targets, count, "live")
        figures |= _throughputs(direct, mixed, seconds, pid, "live")
        with nginx_in_front(output, port) as sock:

            def proxied() -> http.client.HTTPConnection:
                return UnixHTTPConnection(sock, timeout=120)

            figures |= _throughputs(proxied, mixed, seconds, pid, "live_nginx")
        figures["live_serve_rss_mb"], figures["live_serve_peak_rss_mb"] = rss_mb(pid)
    figures |= largest_group_prices(output, count)
    figures |= largest_manifest(output, count)
    figures["live_load_average_after"] = _load()
    return figures


def _direct(port: int) -> Connect:
    def connect() -> http.client.HTTPConnection:
        return http.client.HTTPConnection("127.0.0.1", port, timeout=120)

    return connect


def _latencies(
    connect: Connect, targets: Mapping[str, Sequence[Request]], count: int, prefix: str
) -> dict[str, float]:
    """Median and 95th percentile of each figure's time, its targets one request after the
    other, in turn."""
    figures = {}
    for name, target in targets.items():
        p50, p95 = percentiles(latencies(connect, target, count))
        figures[f"{prefix}_{name}_p50_ms"], figures[f"{prefix}_{name}_p95_ms"] = p50, p95
    return figures


def _throughputs(
    connect: Connect, targets: list[str], seconds: float, pid: int, prefix: str
) -> dict[str, float]:
    """Requests per second with each number of clients, and the server's CPU milliseconds per
    request at 4 clients (what bounds the rate on a given number of cores)."""
    figures = {}
    for clients in CLIENTS:
        cpu = cpu_seconds(pid)
        started = time.perf_counter()
        rate = throughput(connect, targets, clients, seconds)
        if clients == 4:
            requests = rate * (time.perf_counter() - started)
            per_request = (cpu_seconds(pid) - cpu) * 1000 / max(requests, 1)
            figures[f"{prefix}_serve_cpu_ms_per_request_4_clients"] = round(per_request, 2)
        figures[f"{prefix}_requests_per_second_{clients}_clients"] = round(rate, 1)
    return figures


def _load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def report(figures: dict[str, Any]) -> list[str]:
    """One line per live figure, with its target: `ok` or `MISSED` where it has one (a p95
    against twice its p50's target)."""
    width = max(map(len, figures))
    lines = []
    for name, value in figures.items():
        target, verdict = _target(name), ""
        if target is not None and isinstance(value, int | float):
            bound, at_least = target
            met = value >= bound if at_least else value <= bound
            verdict = f"{'>=' if at_least else '<='} {bound:g}  {'ok' if met else 'MISSED'}"
        lines.append(f"{name:<{width}}  {value!s:>12}  {verdict}".rstrip())
    return lines


def _target(name: str) -> tuple[float, bool] | None:
    name = name.replace("live_uncached_", "live_")
    if name in TARGETS:
        return TARGETS[name], name in AT_LEAST
    p50 = name.replace("_p95_", "_p50_")
    if name.endswith("_p95_ms") and p50 in TARGETS:
        return 2 * TARGETS[p50], False
    return None


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(
        prog="python -m bench.live",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--output", type=Path, required=True, help="a build's output directory")
    parser.add_argument("--count", type=int, default=200, help="requests per latency figure")
    parser.add_argument("--seconds", type=float, default=5.0, help="seconds per throughput figure")
    args = parser.parse_args(argv)
    figures = live_latency(args.output, args.count, args.seconds)
    print("\n".join(report(figures)))
    return figures


if __name__ == "__main__":
    main()
