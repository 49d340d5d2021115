"""`pipeline serve` and the generated nginx configuration, over real sockets.

The preview server runs as a subprocess on the sample build; nginx runs on the generated
configuration with the preview server as its live upstream (both started in `conftest.py`).
"""

from __future__ import annotations

import random
import threading
from pathlib import Path
from urllib.parse import quote

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline import db
from pipeline.build import build
from pipeline.serve.routes import answer
from pipeline.settings import load_settings
from tests.support import reference
from tests.support.inputs import write_inputs
from tests.support.servers import Client, preview_server, request, running_nginx
from tests.support.targets import materialised_targets, query_string

# --- the preview server -----------------------------------------------------------------------


def test_get_head_and_other_methods(serve_port: int) -> None:
    got = request(serve_port, "/v1.39.0/stores/TINY7/inventory/products?limit=2")
    assert (got.status, got.content_type) == (200, "application/json; charset=utf-8")
    assert orjson.loads(got.body)["totalItems"] == 6
    head = request(serve_port, "/v1.39.0/stores/TINY7/inventory/products?limit=2", "HEAD")
    assert (head.status, head.body, head.headers["content-length"]) == (
        200,
        b"",
        str(len(got.body)),
    )
    post = request(serve_port, "/v1.39.0/stores/tiny7/inventory/products", "POST")
    assert (post.status, post.headers["allow"]) == (405, "GET, HEAD, OPTIONS")
    assert orjson.loads(post.body) == {
        "success": False,
        "errors": ["The requested resource does not support http method 'POST'."],
        "results": [],
    }


@pytest.mark.parametrize(
    ("target", "status", "error"),
    [
        (
            "/v1.39.0/stores/tiny7/inventory/products?productName=%ZZ",
            404,
            "No products were found.",
        ),
        (
            "/v1.39.0/stores/tiny7/inventory/products?productName=%C3%28",
            400,
            "The query string is not valid UTF-8 after percent-decoding.",
        ),
        (
            "/v1.39.0/stores/tiny7/inventory/products?q=" + "a" * 9000,
            414,
            "The request URL is too long.",
        ),
        ("/v1.39.0/stores/../../../etc/passwd", 400, "The request is malformed."),
        ("/v1.39.0/stores/..%2F..%2Fetc/inventory/products", 404, "URL not found."),
        ("/v1.39.0/stores/%2e%2e/inventory/products", 404, "URL not found."),
        ("/v1.39.0/catalog/categories?limit=0", 400, "limit must be between 1 and 100."),
        ("/V1.39.0/catalog/categories", 404, "URL not found."),
    ],
)
def test_malformed_requests_get_an_envelope(
    serve_port: int, target: str, status: int, error: str
) -> None:
    got = request(serve_port, target)
    assert (got.status, orjson.loads(got.body)) == (
        status,
        {"success": False, "errors": [error], "results": []},
    )


@pytest.mark.slow
def test_static_pages_equal_the_live_computation(sample_build: Path) -> None:
    """Every other materialised page, computed live from the warehouse (no site given); the
    reference-model test compares both paths with an independent model besides."""
    con = db.connect(sample_build / "warehouse.duckdb", read_only=True)
    site = sample_build / "site"
    for target in materialised_targets(sample_build)[::2]:
        forced = answer(con, target, site=None)
        served = answer(con, target, site=site)
        assert (forced.status, forced.body) == (served.status, served.body), target
    con.close()


def test_concurrent_requests(serve_port: int, sample_build: Path, client: Client) -> None:
    targets = materialised_targets(sample_build)[:40] + [
        f"/v1.39.0/stores/3d05ef67/inventory/products?sort=name&offset={n}"
        for n in range(0, 200, 10)
    ]
    expected = {t: client.request(serve_port, t).body for t in targets}
    failures: list[str] = []

    def worker() -> None:
        """Every target in an order of its own, on a connection of its own."""
        own = Client()
        try:
            for target in random.Random(threading.get_ident()).sample(targets, len(targets)):
                if own.request(serve_port, target).body != expected[target]:
                    failures.append(target)
        except Exception as error:  # a thread's exception would be a warning, not a failure
            failures.append(repr(error))
        finally:
            own.close()

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []


def test_server_picks_up_a_new_build(tmp_path: Path) -> None:
    def listings(price: str) -> list[dict[str, object]]:
        return [{"storeKey": "s1", "skuId": 1000, "price": price, "quantity": 1}]

    output = tmp_path / "out"
    build(
        load_settings(
            None, input=write_inputs(tmp_path / "a", listings=listings("1.00")), output=output
        )
    )
    with preview_server(output) as port:
        live = "/v1.39.0/stores/s1/inventory/products?sort=name"
        static = "/v1.39.0/stores/s1/inventory/products"
        assert orjson.loads(request(port, live).body)["results"][0]["lowestPrice"] == 1.0
        build(
            load_settings(
                None, input=write_inputs(tmp_path / "b", listings=listings("2.50")), output=output
            )
        )
        assert orjson.loads(request(port, live).body)["results"][0]["lowestPrice"] == 2.5
        assert orjson.loads(request(port, static).body)["results"][0]["lowestPrice"] == 2.5


# --- random requests against the independent reference model ---------------------------------

INTS = ["0", "1", "3", "10", "010", "-1", "100", "101", "abc", "", "2147483648", "1.5", "+5", "１"]
BOOLS = ["true", "false", "TRUE", "False", "maybe", "", "1"]
SORTS = [
    "price",
    "PRICE desc",
    " name  ASC ",
    "minprice",
    "productname desc",
    "cost",
    "price up",
    "",
]
NAMES = ["magic", "POKEMON", "pokémon", "Alpha", "base set", "dragon", "é", "", "ピ"]
PARAMS = {
    "categoryId": [*INTS, "1", "2", "3", "62", "71"],
    "categoryName": NAMES,
    "groupId": [*INTS, "1001", "1009", "1014"],
    "groupName": [*NAMES, "Metal Raiders", "base SET"],
    "productName": [*NAMES, "ring", "Ach", '"', "ex"],
    "skuLimit": INTS,
    "sort": SORTS,
    "includeGeneric": BOOLS,
    "includeCustom": BOOLS,
    "channelId": INTS,
    "includeExcludedCategories": BOOLS,
    "offset": [*INTS, "20", "200"],
    "limit": [*INTS, "5", "50"],
    "unknownParam": ["x"],
}
STORES = [
    "tiny7",
    "TINY7",
    "3d05ef67",
    "a1b2c3d4",
    "KardKastle",
    "tokyo-cards_01",
    "closed-store",
    "nobody",
    "mom-and-pop",
]


@st.composite
def targets(draw: st.DrawFn) -> tuple[str, str]:
    query = query_string(draw, PARAMS, max_size=6)
    store = draw(st.sampled_from(STORES))
    slash = draw(st.sampled_from(["", "/"]))
    return f"/v1.39.0/stores/{store}/inventory/products{slash}", query


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(target=targets())
def test_random_requests_match_the_reference(
    serve_port: int, sample_data: reference.Data, client: Client, target: tuple[str, str]
) -> None:
    path, query = target
    got = client.request(serve_port, f"{path}?{query}" if query else path)
    assert (got.status, got.body) == reference.answer_url(sample_data, path, query)


# --- nginx -------------------------------------------------------------------------------------


def _variants(target: str, rng: random.Random) -> list[str]:
    """Other spellings of the same request: parameter order, name case, leading zeros."""
    path, _, query = target.partition("?")
    pairs = [p.split("=") for p in query.split("&")] if query else []
    out = [path + "/" + (f"?{query}" if query else "")]
    if pairs:
        shuffled = pairs[:]
        rng.shuffle(shuffled)
        out.append(path + "?" + "&".join(f"{n.upper()}={'0' + v}" for n, v in shuffled))
        out.append(
            path + "?" + "&".join(f"{n.lower()}={v}" for n, v in pairs) + "&limit=10&offset=0"
        )
    else:
        out.append(path + "?channelId=0&Offset=00&LIMIT=10&skuLimit=3")
    return out


def test_nginx_and_the_preview_server_agree(
    nginx_socket: Path, serve_port: int, sample_build: Path, client: Client
) -> None:
    rng = random.Random(7)
    materialised = materialised_targets(sample_build)
    sampled = rng.sample(materialised, 120)
    others = [v for t in sampled for v in _variants(t, rng)] + [
        "/v1.39.0/stores/TINY7/inventory/products",
        "/v1.39.0/stores/nobody/inventory/products",
        "/v1.39.0/stores/closed-store/inventory/products",
        "/v1.39.0/stores/tiny7/inventory/products?offset=10",
        "/v1.39.0/stores/tiny7/inventory/products?offset=-1&limit=0",
        "/v1.39.0/stores/tiny7/inventory/products?sort=name&productName=" + quote("é"),
        "/v1.39.0/stores/tiny7/inventory/products?offset=&limit=10",
        "/v1.39.0/stores/tiny7/inventory/products?categoryId=99999999999",
        "/v1.39.0/catalog/categories?offset=0010",
        "/v1.39.0/help/index",
        "/v1.39.0/help/openapi.json",
        "/stores/tiny7/inventory/products",
        "/current/stores/tiny7/inventory/products",
        "/v1.38.0/stores/tiny7/inventory/products",
        "/v1.39.0/stores/tiny7/inventory/products/extra",
        "/",
        "/v1.39.0/stores/x/../tiny7/inventory/products",
        "//v1.39.0//stores/tiny7/./inventory/products",
        "/v1.39.0/stores/%2e%2e/inventory/products",
        "/v1.39.0/help/openapi.json/",
        "/index.html",
        "/x.png",
        "/v1.39.0/catalog/categories.txt",
        "/v1.39.0/help/index?x=" + "a" * 8200,
        "/v1.39.0/stores/tiny7/inventory/products?x=" + "a" * 8300,
        "/v1.39.0/stores/tiny7/inventory/products?offset=" + "9" * 5000,
        "/v1.39.0/stores/tiny7/inventory/products?productName=" + "a" * 300,
        "/v1.39.0/stores/tiny7/inventory/products?sort=name%09desc",
    ]
    compared = 0
    for target in materialised + others:
        a, b = client.request(nginx_socket, target), client.request(serve_port, target)
        assert (a.status, a.content_type, a.body) == (b.status, b.content_type, b.body), target
        compared += 1
    for method in ("POST", "PUT", "DELETE", "PATCH"):
        for target in (
            "/v1.39.0/stores/tiny7/inventory/products",
            "/v1.39.0/help/index",
            "/nowhere",
        ):
            a, b = request(nginx_socket, target, method), request(serve_port, target, method)
            assert (a.status, a.content_type, a.body) == (b.status, b.content_type, b.body), (
                method,
                target,
            )
            assert a.headers["allow"] == "GET, HEAD, OPTIONS"
            compared += 1
    assert compared > 700


def test_nginx_serves_materialised_pages_from_files(
    sample_build: Path, tmp_path: Path, client: Client
) -> None:
    """With no live upstream at all, every materialised page still comes from nginx."""
    nobody = tmp_path / "nobody.sock"  # a socket path nothing ever listens on
    with running_nginx(tmp_path / "nginx", sample_build / "site", f"unix:{nobody}") as sock:
        for target in materialised_targets(sample_build):
            path, _, query = target.partition("?")
            file = sample_build / "site" / path.lstrip("/") / f"{query or 'index'}.json"
            got = client.request(sock, target)
            assert (got.status, got.body) == (200, file.read_bytes()), target
        unavailable = request(sock, "/v1.39.0/stores/tiny7/inventory/products?sort=name")
        assert unavailable.status == 503
        assert request(sock, "/v1.39.0/nothing").status == 404
        assert request(sock, "/v1.39.0/help/index", "DELETE").status == 405


def test_the_build_emits_the_nginx_configuration(sample_build: Path) -> None:
    conf = (sample_build / "nginx.conf").read_text()
    assert f'root "{(sample_build / "site").absolute()}";' in conf
    assert "tiny7" not in conf, "the configuration lists no store keys"
