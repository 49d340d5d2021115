"""Search (docs/contract.md §12) over real sockets: random bodies and query strings `POST`ed to
`pipeline serve` against the independent reference model on the sample, nginx giving the same
bytes; a store's search with no filter equal to its summary, for every store of the sample;
and the HTTP around a `POST` (405 elsewhere, 404 for a `GET` of a search, 413, no-store,
never cached)."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import quote, unquote

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline import db
from pipeline.api.responses import ALLOWED_METHODS
from pipeline.serve import posts
from pipeline.settings import ServeSettings
from tests.support import reference
from tests.support.servers import Client, envelope, request
from tests.support.targets import query_string

STORES = ["mom-and-pop", "Card-Cellar", "tiny7", "closed-store", "3d05ef67", "nobody", "bad.key"]
CATEGORIES = ["1", "2", "3", "62", "71", "9", "0", "-1", "03", "x", "2147483648"]
QUERY = {
    "skuLimit": ["0", "1", "5", "-1", "x", ""],
    "includeCustom": ["true", "false", "maybe"],
    "includeGeneric": ["true", "FALSE", ""],
    "channelId": ["0", "1", "2", "x"],
    "includeExcludedCategories": ["true", "false", "1"],
    "sort": ["name", "bad"],  # not the search's: ignored
    "limit": ["1000"],
    "unknown": ["x"],
}
FILTER_NAMES = ["ProductName", "productname", "SETNAME", "Number", "rarity", "Price", "", None]
VALUES = [
    "a", "LUGIA", "é", "sol", "Solitude", "solitude", "", "zzz", "Ring", "ach",  # names
    "All", "all", "base set", "Dominaria United", "Pokémon Card Game Classic",  # sets
    "001", "013", "1", "Common", "rare", "MYTHIC", "Starlight Rare",  # numbers, rarities
]  # fmt: skip
SORTS = [
    "ProductName ASC", "productname asc", " MinPrice   DESC ", "MinPrice ASC", "Relevance",
    "relevance", "", "Sales DESC", "ProductName", "MinPrice\tASC", None, 3, ["Relevance"],
]  # fmt: skip
NUMBERS = [None, 0, 1, 3, 10, 100, 101, -1, 2**31, 10.0, "10", True, 1e2, 2**70]
NOT_JSON = [
    b"",
    b" ",
    b"[]",
    b"null",
    b'"x"',
    b"{",
    b'{"limit":NaN}',
    b"\xef\xbb\xbf{}",  # a BOM
    b'{"sort":"\xff"}',  # not UTF-8
    b'{"sort":"\\ud800"}',  # a lone surrogate
    b"{} {}",
    b"sort=Relevance",
]


@st.composite
def filters(draw: st.DrawFn) -> object:
    kind = draw(st.integers(0, 9))
    if kind == 0:  # not a list of objects
        return draw(st.sampled_from(["ProductName", {"name": "ProductName"}, [1], [None]]))
    found: list[object] = []
    for _ in range(draw(st.integers(0, 3))):
        item: dict[str, object] = {}
        name = draw(st.sampled_from(FILTER_NAMES))
        if name is not None or draw(st.booleans()):
            item["name"] = name
        values = draw(st.lists(st.sampled_from(VALUES), max_size=3))
        shape = draw(st.integers(0, 9))
        item["values"] = values if shape > 1 else [None] if shape == 1 else None
        if draw(st.booleans()):
            item["other"] = 1
        found.append(item)
    return found


@st.composite
def bodies(draw: st.DrawFn) -> bytes:
    """A body: mostly a JSON object of the search's keys, valid or not; else not JSON, or not
    an object."""
    if draw(st.integers(0, 7)) == 0:
        return draw(st.sampled_from(NOT_JSON))
    keys: dict[str, object] = {}
    if draw(st.booleans()):
        keys["sort"] = draw(st.sampled_from(SORTS))
    for key in ("limit", "offset"):
        if draw(st.booleans()):
            keys[key] = draw(st.sampled_from(NUMBERS))
    if draw(st.integers(0, 3)):
        keys["filters"] = draw(filters())
    if draw(st.booleans()):
        keys["includeAggregates"] = draw(st.sampled_from([True, "x", None]))
    text = json.dumps(keys, ensure_ascii=draw(st.booleans()))
    if draw(st.integers(0, 9)) == 0:  # duplicate keys: the last wins
        text = '{"limit": 0, "sort": "x",' + text[1:] if len(text) > 2 else text
    return text.encode()


@st.composite
def targets(draw: st.DrawFn) -> str:
    category = draw(st.sampled_from(CATEGORIES))
    if draw(st.booleans()):
        path = f"/v1.39.0/catalog/categories/{category}/search"
    else:
        store = quote(draw(st.sampled_from(STORES)))
        path = f"/v1.39.0/stores/{store}/inventory/categories/{category}/search"
    path += draw(st.sampled_from(["", "/"]))
    query = query_string(draw, QUERY, max_size=4)
    return f"{path}?{query}" if query else path


def _model(data: reference.Data, target: str, body: bytes) -> tuple[int, bytes]:
    path, _, query = target.partition("?")
    found = reference.answer_post(data, unquote(path), query, body)
    assert found is not None, target
    return found


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(target=targets(), body=bodies())
def test_random_searches_match_the_reference(
    serve_port: int,
    nginx_socket: Path,
    sample_data: reference.Data,
    client: Client,
    target: str,
    body: bytes,
) -> None:
    got = client.request(serve_port, target, "POST", body=body)
    assert (got.status, got.body) == _model(sample_data, target, body), (target, body)
    through = client.request(nginx_socket, target, "POST", body=body)
    assert (through.status, through.body) == (got.status, got.body), (target, body)


def test_searches_find_what_the_sample_holds(
    serve_port: int, sample_build: Path, sample_data: reference.Data, client: Client
) -> None:
    """Beside the random bodies, which mostly miss: each filter kind and sort on a category
    with many products, paged to its end; and each answered from the warehouse alone too (the
    server cuts a small store's pages from its products kept whole)."""
    cases = [
        {"filters": [{"name": "ProductName", "values": ["a"]}], "sort": "MinPrice DESC"},
        {"filters": [{"name": "SetName", "values": ["base set", "Evolving Skies"]}]},
        {"filters": [{"name": "Rarity", "values": ["rare", "Common"]}], "sort": "MinPrice ASC"},
        {"filters": [{"name": "Number", "values": ["001", "013", "025"]}]},
        {"filters": [{"name": "ProductName", "values": ["Charizard", "char", "pi"]}]},
        {"sort": "ProductName ASC"},
    ]
    answered = 0
    con = db.connect(sample_build / "warehouse.duckdb", read_only=True)
    for case in cases:
        for offset in (0, 20):
            body = json.dumps({**case, "offset": offset}).encode()
            for target in (
                "/v1.39.0/catalog/categories/3/search",
                "/v1.39.0/stores/mom-and-pop/inventory/categories/3/search?skuLimit=1",
            ):
                got = client.request(serve_port, target, "POST", body=body)
                assert (got.status, got.body) == _model(sample_data, target, body), (target, body)
                named = posts.match(target)
                assert named is not None
                alone = posts.answer(named, body, lambda: con)
                assert (alone.status, alone.body) == (got.status, got.body)
                answered += got.status == 200
    con.close()
    assert answered >= 10


def test_a_store_search_without_filters_is_its_summary(
    serve_port: int, sample_data: reference.Data, client: Client
) -> None:
    """For every store of the sample and every category, in one of the sorts: the search's
    answer is the summary's of the same store, category and sort, byte for byte."""
    sorts = {
        "ProductName ASC": "name",
        "MinPrice DESC": "price desc",
        "MinPrice ASC": "price asc",
        "Relevance": "name",  # without a ProductName filter: by name
    }
    compared = 0
    pairs = [
        (s, c) for s in sorted(sample_data.known_stores()) for c in sorted(sample_data.categories)
    ]
    for turn, (store, category) in enumerate(pairs):
        # Each pair one sort, in turn: every store and category, every sort many times.
        for search_sort, summary_sort in [list(sorts.items())[turn % len(sorts)]]:
            query = "skuLimit=2&includeExcludedCategories=true"
            body = json.dumps({"sort": search_sort, "limit": 100}).encode()
            got = client.request(
                serve_port,
                f"/v1.39.0/stores/{store}/inventory/categories/{category}/search?{query}",
                "POST",
                body=body,
            )
            summary = client.request(
                serve_port,
                f"/v1.39.0/stores/{store}/inventory/products?categoryId={category}"
                f"&sort={quote(summary_sort)}&limit=100&{query}",
            )
            assert (got.status, got.body) == (summary.status, summary.body), (store, category)
            compared += got.status == 200
    assert compared >= 10


def test_a_post_answer_is_never_kept(serve_port: int, nginx_socket: Path, client: Client) -> None:
    """No ETag, Cache-Control no-store, conditional headers ignored; and nginx answers each
    body anew (its cache keys a URL, not a body)."""
    target = "/v1.39.0/catalog/categories/3/search"
    for server in (serve_port, nginx_socket):
        first = client.request(server, target, "POST", body=b'{"limit":1}')
        conditions = {"If-None-Match": "*", "If-Match": '"x"', "If-Unmodified-Since": "x"}
        second = client.request(server, target, "POST", conditions, body=b'{"limit":2}')
        assert first.status == second.status == 200
        assert json.loads(first.body)["results"] != json.loads(second.body)["results"]
        for reply in (first, second):
            assert reply.headers["cache-control"] == "no-store"
            assert "etag" not in reply.headers
            assert reply.headers["access-control-allow-origin"] == "*"


def test_only_the_searches_take_a_post(serve_port: int, nginx_socket: Path, client: Client) -> None:
    """A GET of a search's path is 404 `URL not found.`; a POST anywhere else stays 405, and
    a PUT of a search's path too."""
    searches = (
        "/v1.39.0/catalog/categories/3/search",
        "/v1.39.0/stores/mom-and-pop/inventory/categories/3/search",
    )
    for server in (serve_port, nginx_socket):
        for target in searches:
            for method in ("GET", "HEAD"):
                got = client.request(server, target, method)
                assert got.status == 404, (server, target, method)
                if method == "GET":
                    assert json.loads(got.body) == envelope("URL not found.")
            got = client.request(server, target, "PUT", body=b"{}")
            assert got.status == 405
        for target in (
            "/v1.39.0/catalog/categories/3/search/manifest",
            "/v1.39.0/stores/mom-and-pop/inventory/products",
            "/v1.39.0/catalog/categories",
            "/v1.39.0/search",
            "/v1.39.0/stores/mom-and-pop/inventory/categories/3",
        ):
            got = client.request(server, target, "POST", body=b"{}")
            assert got.status == 405, (server, target)
            assert got.headers["allow"] == ", ".join(ALLOWED_METHODS)
            assert json.loads(got.body) == envelope(
                "The requested resource does not support http method 'POST'."
            )


def test_a_body_past_the_limit_is_413(serve_port: int, nginx_socket: Path) -> None:
    """`serve.max_request_body_size` bytes are read; one more is 413, on both servers."""
    limit = ServeSettings().max_request_body_size
    target = "/v1.39.0/catalog/categories/3/search"
    fits = b'{"sort":"Relevance"' + b" " * (limit - 20) + b"}"
    assert len(fits) == limit
    for server in (serve_port, nginx_socket):
        assert request(server, target, "POST", body=fits).status == 200
        # Refused on its Content-Length, before any byte of it is read (none is sent).
        refused = request(server, target, "POST", {"Content-Length": str(limit + 1)})
        assert refused.status == 413
        assert json.loads(refused.body) == envelope("The request body is too large.")


# The recorded answer of the live service for category 2 (a 2019 recording, kept beside the
# contract): its sorts, and the filters this pipeline's inputs can answer, with their display
# names and input types. "Best Selling" needs sales, which no input has.
RECORDED_SORTING = [
    {"text": "A-Z", "value": "ProductName ASC"},
    {"text": "Price: High to Low", "value": "MinPrice DESC"},
    {"text": "Price: Low to High", "value": "MinPrice ASC"},
    {"text": "Relevance", "value": "Relevance"},
    {"text": "Best Selling", "value": "Sales DESC"},
]
RECORDED_FILTERS = [
    ("ProductName", "Product Name", "Text"),
    ("SetName", "Set", "SingleValue"),
    ("Number", "Number", "Text"),
    ("Rarity", "Rarity", "MultipleValues"),
]


def test_the_manifest_has_the_recorded_shape_and_the_document_says_so(
    serve_port: int, nginx_socket: Path, client: Client
) -> None:
    """The manifest as the live service words it; the OpenAPI document describes the three
    operations, and their answers parse into its models."""
    from pipeline.api.catalog_models import ProductIdPage, SearchManifest
    from pipeline.api.models import InventoryPage, ResultsResponse

    for server in (serve_port, nginx_socket):
        got = client.request(server, "/v1.39.0/catalog/categories/2/search/manifest")
        ResultsResponse[SearchManifest].model_validate_json(got.body)
        manifest = json.loads(got.body)["results"][0]
        assert manifest["sorting"] == RECORDED_SORTING[:4]
        shapes = [(f["name"], f["displayName"], f["inputType"]) for f in manifest["filters"]]
        assert shapes == RECORDED_FILTERS
        assert manifest["filters"][1]["items"][0] == {"text": "All Sets", "value": "All"}
    document = json.loads(client.request(serve_port, "/v1.39.0/help/openapi.json").body)
    assert sorted(
        (op["operationId"], method, path)
        for path, item in document["paths"].items()
        if "/search" in path
        for method, op in item.items()
    ) == [
        (
            "Catalog_GetCategorySearchManifest",
            "get",
            "/catalog/categories/{categoryId}/search/manifest",
        ),
        ("Catalog_SearchCategory", "post", "/catalog/categories/{categoryId}/search"),
        (
            "Stores_ProductSearchByCategory",
            "post",
            "/stores/{storeKey}/inventory/categories/{categoryId}/search",
        ),
    ]
    searched = client.request(
        serve_port, "/v1.39.0/catalog/categories/1/search", "POST", body=b'{"limit":100}'
    )
    ProductIdPage.model_validate_json(searched.body)
    summary = client.request(
        serve_port, "/v1.39.0/stores/mom-and-pop/inventory/categories/1/search", "POST", body=b"{}"
    )
    InventoryPage.model_validate_json(summary.body)
    help_page = client.request(serve_port, "/v1.39.0/help/index").body.decode()
    for path in ("/search/manifest", "POST /v1.39.0/catalog/categories/{categoryId}/search"):
        assert path in help_page


def test_name_matching_and_the_searches_order_have_one_definition() -> None:
    """The summary's page (the summary and a store's search), the catalog's products and the
    catalog's search match names by the macros of sql/macros.sql, and order by relevance by
    its macro: no query spells the rule again."""
    from pipeline.db import MACROS
    from pipeline.transform.steps import CATALOG_SEARCH, QUERIES, STORE_INVENTORY_PAGE

    for name in ("name_matches", "search_matches", "search_reads_keys", "name_relevance"):
        assert MACROS.count(f"MACRO {name}(") == 1, name
    texts = {file.path: file.file.read_text() for file in (*QUERIES, STORE_INVENTORY_PAGE)}
    for path, text in texts.items():
        code = "\n".join(line.split("--")[0] for line in text.splitlines())
        assert "contains(name_key" not in code and "starts_with(" not in code, path
    assert "search_matches(" in texts[STORE_INVENTORY_PAGE.path]
    assert "name_relevance(" in texts[STORE_INVENTORY_PAGE.path]
    assert "search_matches(" in texts[CATALOG_SEARCH.path]
    assert "name_relevance(" in texts[CATALOG_SEARCH.path]
    assert "name_matches(" in texts["api/catalog_products"]


def _plan_nodes(node: object) -> list[dict[str, object]]:
    """Every operator of an `EXPLAIN (FORMAT JSON)` plan."""
    if isinstance(node, list):
        return [found for child in node for found in _plan_nodes(child)]
    assert isinstance(node, dict)
    return [node, *_plan_nodes(node.get("children", []))]


def test_a_catalog_search_reads_the_keys_for_a_number_or_rarity_filter_only(
    sample_build: Path,
) -> None:
    """The catalog's search looks up export.product's number and rarity only for a filter on
    them (a name search read every product's keys for nothing); and where it does, it filters
    after the join, not in the join's condition, where DuckDB ran the filter's lambdas far
    slower."""
    from pipeline.api.params import used
    from pipeline.api.search import SearchBody
    from pipeline.transform.steps import CATALOG_SEARCH

    sql = CATALOG_SEARCH.sql
    con = db.connect(sample_build / "warehouse.duckdb", read_only=True)

    def plan(*filters: tuple[str, tuple[str, ...]]) -> list[dict[str, object]]:
        body = SearchBody(filters=filters)
        values = {
            "category_id": 3,
            "search_filters": body.filters_json(),
            "sort": body.sort,
            "limit": body.limit,
            "offset": body.offset,
        }
        text = con.execute(f"EXPLAIN (FORMAT JSON) {sql}", used(sql, values)).fetchall()[0][1]
        return _plan_nodes(json.loads(text))

    def reads_keys(nodes: list[dict[str, object]]) -> bool:
        tables = [str(n.get("extra_info", {}).get("Table", "")) for n in nodes]  # type: ignore[attr-defined]
        return any(t.endswith('"export".product') for t in tables)

    for filters in [(), (("productname", ("a",)),), (("setname", ("all",)), ("number", ()))]:
        assert not reads_keys(plan(*filters)), filters
    for filters in [(("number", ("001",)),), (("productname", ("a",)), ("rarity", ("rare",)))]:
        nodes = plan(*filters)
        assert reads_keys(nodes), filters
        joins = [json.dumps(n.get("extra_info")) for n in nodes if "JOIN" in str(n["name"])]
        assert joins and not [j for j in joins if "list_filter" in j], filters
        assert [n for n in nodes if n["name"] == "FILTER" and "list_filter" in json.dumps(n)]
    con.close()
