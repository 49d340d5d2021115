"""The store's other inventory operations (docs/contract.md §5) over real sockets: `pipeline serve`
against the independent reference model on the sample, nginx against `pipeline serve`, and a
client generated from the published OpenAPI document by a standard generator."""

from __future__ import annotations

import importlib
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline.api.operations import STORE_OPERATIONS
from tests.support import reference
from tests.support.servers import Client, both, request
from tests.support.targets import query_string

INTS = ["0", "1", "2", "3", "10", "010", "-1", "100", "101", "abc", "", "2147483648", "1.5"]
BOOLS = ["true", "false", "TRUE", "maybe", "", "1"]
PARAMS = {
    "includeGeneric": BOOLS,
    "includeCustom": BOOLS,
    "includeExcludedCategories": BOOLS,
    "inStockOnly": BOOLS,
    "channelId": ["0", "1", "1", "2", "-1", "x"],
    "offset": [*INTS, "20"],
    "limit": INTS,
    "categoryId": ["1", "3", "62", "71", "9", "-1", "x"],
    "categoryName": ["magic", "POKEMON", "pokémon", "", "Lorcana TCG"],
    "groupId": ["1001", "1009", "1014", "0", "x", "9223372036854775808"],
    "skuId": ["1", "5", "100", "x"],
    "unknownParam": ["x"],
}
STORES = ["tiny7", "TINY7", "3d05ef67", "a1b2c3d4", "card-cellar", "closed-store", "nobody", "b@d"]
PRODUCTS = ["1", "2", "5", "17", "40", "101", "999999", "abc", "-3", "99999999999999999999"]
OPERATIONS = [op.path.removeprefix("inventory/") for op in STORE_OPERATIONS]


@st.composite
def targets(draw: st.DrawFn) -> tuple[str, str]:
    operation = draw(st.sampled_from(OPERATIONS))
    path = operation.replace("{productId}", draw(st.sampled_from(PRODUCTS)))
    store = draw(st.sampled_from(STORES))
    slash = draw(st.sampled_from(["", "/"]))
    query = query_string(draw, PARAMS, max_size=5)
    return f"/v1.39.0/stores/{store}/inventory/{path}{slash}", query


@settings(
    max_examples=250, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(target=targets())
def test_random_requests_match_the_reference(
    serve_port: int, sample_data: reference.Data, client: Client, target: tuple[str, str]
) -> None:
    path, query = target
    got = client.request(serve_port, f"{path}?{query}" if query else path)
    expected = reference.answer_operation(sample_data, path.replace("%40", "@"), query)
    assert (got.status, got.body) == expected, (path, query)


def test_nginx_and_the_preview_server_agree(
    nginx_socket: Path, serve_port: int, client: Client
) -> None:
    """Files (lower-case keys, the default request of a channel, paged) and live answers."""
    compared = 0
    for store in ("3d05ef67", "3D05EF67", "tiny7", "nobody"):
        for operation in (*OPERATIONS, "products/x/skus", "products/1/other", "skuprices/1"):
            path = f"/v1.39.0/stores/{store}/inventory/{operation.replace('{productId}', '1')}"
            for query in ("", "?channelId=1", "?LIMIT=10&offset=010", "?offset=10", "?limit=0"):
                for suffix in ("", "/"):
                    both(nginx_socket, serve_port, path + suffix + query, client)
                    compared += 1
            reply = request(nginx_socket, path, "POST")
            assert reply.status == 405
    assert compared > 300


# --- a client generated from the published OpenAPI document -----------------------------------


@pytest.fixture(scope="module")
def client_package(tmp_path_factory: pytest.TempPathFactory, sample_build: Path) -> ModuleType:
    """The document as published, through openapi-python-client (offline: no post hooks)."""
    work = tmp_path_factory.mktemp("client")
    document = sample_build / "site" / "v1.39.0" / "help" / "openapi.json"
    # The generator does not know Parquet's registered media type: read as bytes, as any file.
    (work / "config.yaml").write_text(
        "post_hooks: []\n"
        "content_type_overrides:\n  application/vnd.apache.parquet: application/octet-stream\n"
    )
    generator = Path(sys.executable).parent / "openapi-python-client"
    subprocess.run(
        [
            str(generator),
            "generate",
            "--path",
            str(document),
            "--meta",
            "none",
            "--config",
            "config.yaml",
            "--output-path",
            "inventory_client",
        ],
        cwd=work,
        check=True,
        capture_output=True,
        env={**os.environ, "NO_COLOR": "1"},
        timeout=120,
    )
    sys.path.insert(0, str(work))
    try:
        return importlib.import_module("inventory_client")
    finally:
        sys.path.remove(str(work))


def _call(package: ModuleType, operation_id: str, port: int, **kw: Any) -> Any:
    """`sync_detailed` of the generated module of an operation, over HTTP."""
    client = package.Client(
        base_url=f"http://127.0.0.1:{port}/v1.39.0", raise_on_unexpected_status=True
    )
    name = re.sub(r"(?<=[a-z])(?=[A-Z])", "_", operation_id).lower()  # Stores_GetX: stores_get_x
    module = importlib.import_module(f"{package.__name__}.api.default.{name}")
    return module.sync_detailed(client=client, **kw)


def test_a_generated_client_reads_every_operation(
    client_package: ModuleType, serve_port: int, sample_data: reference.Data
) -> None:
    store = "3d05ef67"
    # A product of the store's with a custom listing for sale on channel 0.
    product = min(
        sample_data.skus[r["skuId"]]["productId"]
        for r in sample_data.listings
        if r["storeKey"].lower() == store
        and r["isCustom"]
        and r["quantity"] > 0
        and r["channelId"] == 0
    )
    cases: list[tuple[str, dict[str, Any]]] = [
        ("Stores_GetStoreInventory", {"store_key": store, "limit": 3}),
        ("Catalog_GetCategories", {"sort_order": "popularity", "sort_desc": True}),
        ("Stores_GetStoreProductSkus", {"store_key": store, "product_id": product}),
        ("Stores_GetInventoryProductQuantity", {"store_key": store, "product_id": product}),
        ("Stores_GetInventorySkuPrices", {"store_key": store, "limit": 50}),
        ("Stores_GetStoreGroups", {"store_key": store, "channel_id": 1}),
        ("Stores_GetStoreCategories", {"store_key": store}),
    ]
    for operation_id, arguments in cases:
        response = _call(client_package, operation_id, serve_port, **arguments)
        assert response.status_code == 200, (operation_id, response.content)
        body = orjson.loads(response.content)
        parsed = response.parsed
        assert parsed is not None and parsed.to_dict() == body, operation_id
        assert len(body["results"]) >= 1
    missing = _call(client_package, "Stores_GetStoreCategories", serve_port, store_key="nobody")
    assert missing.status_code == 404
    assert missing.parsed.to_dict() == {
        "success": False,
        "errors": ["No stores were found."],
        "results": [],
    }


def test_a_generated_client_reads_the_bulk_files_groups_and_token_and_revalidates(
    client_package: ModuleType, serve_port: int, sample_build: Path
) -> None:
    """The operations the document declares beside the API's: every group, a token (posted to
    `/token` under the base URL), the bulk index (its model) and a bulk file of each type, one
    range of it (206); and a GET's ETag sent back as If-None-Match is 304."""
    groups = _call(client_package, "Catalog_GetGroups", serve_port, category_id=3, limit=2)
    assert groups.status_code == 200
    assert groups.parsed.to_dict() == orjson.loads(groups.content)
    assert groups.parsed.total_items >= 2 and len(groups.parsed.results) == 2
    again = _call(
        client_package,
        "Catalog_GetGroups",
        serve_port,
        category_id=3,
        limit=2,
        if_none_match=groups.headers["etag"],
    )
    assert (again.status_code, again.content) == (304, b"")
    form = importlib.import_module(f"{client_package.__name__}.models.token_post_body")
    body = form.TokenPostBody.from_dict(
        {"grant_type": "client_credentials", "client_id": "generated", "client_secret": "x"}
    )
    token = _call(client_package, "Token_Post", serve_port, body=body)
    assert token.status_code == 200 and token.parsed.user_name == "generated"
    assert token.parsed.to_dict() == orjson.loads(token.content)
    index = _call(client_package, "Bulk_GetIndex", serve_port)
    assert index.status_code == 200 and index.parsed.to_dict() == orjson.loads(index.content)
    files = [f.path for f in index.parsed.files]
    parquet = next(f for f in index.parsed.files if f.path.endswith(".parquet"))
    csv = next(f for f in index.parsed.files if f.path.endswith(".csv"))
    got = _call(
        client_package, "Bulk_GetCategoryParquet", serve_port, category_id=parquet.category_id
    )
    site = sample_build / "site"
    assert got.content == (site / parquet.path.lstrip("/")).read_bytes()
    footer = _call(
        client_package,
        "Bulk_GetCategoryParquet",
        serve_port,
        category_id=parquet.category_id,
        range_="bytes=-4",
    )
    assert (footer.status_code, footer.content) == (206, b"PAR1")  # a Parquet file's last bytes
    got = _call(
        client_package,
        "Bulk_GetGroupCsv",
        serve_port,
        category_id=csv.category_id,
        group_id=csv.group_id,
    )
    assert got.content == (site / csv.path.lstrip("/")).read_bytes()
    assert len(files) > 2
