"""A public client authenticates and reads the catalog and the marketplace prices unchanged,
only its base URL set: `tcgplayer-client` 2.0.3 posts its client credentials to `/token` (under
its base URL) first, as it does against the live service, then calls `pricing/group/{id}`,
`pricing/product/{ids}`, `catalog/categories/{id}`, `catalog/groups/{id}`, `catalog/products`
and `catalog/conditions` with its own methods and its token, and searches a category (its
manifest, then a POST of a search: docs/contract.md §12), through `pipeline serve`, the
generated nginx and nginx in front of a bucket (docs/contract.md §7, §10), and reads what the
servers answer, unchanged. Like the live API, a partly found list of ids is a 207, which the
client raises as an API error with the body.

The package is installed by uv, at a pinned version, into a throwaway folder; without the
package index (an offline machine), the test is skipped with the reason."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support import reference
from tests.support.clients import client_installed, run_client
from tests.support.servers import request

PACKAGES = ("tcgplayer-client==2.0.3",)

# The client's own calls, against the server named by argv[1] (`.../v1.39.0`), reached through
# the unix-domain socket argv[2] when given (nginx's in the tests: aiohttp's connections are
# made there, the client untouched). It authenticates first, as against the live service.
SCRIPT = """
import asyncio, json, sys
import aiohttp, aiohttp.client
if len(sys.argv) > 2:
    unix = lambda *args, **kwargs: aiohttp.UnixConnector(path=sys.argv[2])
    aiohttp.TCPConnector = aiohttp.client.TCPConnector = unix
from tcgplayer_client import TCGPlayerClient
from tcgplayer_client.config import ClientConfig
from tcgplayer_client.exceptions import APIError

async def main(base):
    client = TCGPlayerClient("public-key", "private", config=ClientConfig(base_url=base, enable_caching=False))
    authenticated = await client.authenticate()
    catalog, pricing = client.endpoints.catalog, client.endpoints.pricing
    read = {
        "token": [authenticated["success"], client.auth.access_token],
        "pricing/group/1001": await pricing.get_product_prices_by_group(1001),
        "pricing/product/100001,100002,300005": await pricing.get_market_prices([100001, 100002, 300005]),
        "catalog/categories/3": await catalog.get_category_details(3),
        "catalog/groups/1009": await catalog.get_group_details(1009),
        "catalog/products?categoryId=3&limit=5&offset=5": await catalog.get_products(category_id=3, limit=5, offset=5),
        "catalog/products?groupId=1001&productName=sol": await catalog.get_products(group_id=1001, product_name="sol"),
        "catalog/conditions": await catalog.get_condition_names(),
    }
    try:
        await pricing.get_market_prices([100001, 7])
        read["partial"] = None
    except APIError as exc:
        read["partial"] = [exc.status_code, json.loads(exc.response_data)]
    # Its search methods name the version in their own paths: a client of the host's root.
    root = TCGPlayerClient("public-key", "private", config=ClientConfig(base_url=base.removesuffix("/v1.39.0"), enable_caching=False))
    root.auth.access_token = client.auth.access_token
    read["catalog/categories/3/search/manifest"] = await root.endpoints.catalog.get_category_search_manifest(3)
    read["searched"] = await root.endpoints.catalog.search_category_products(3, __SEARCH__)
    print(json.dumps(read))

asyncio.run(main(sys.argv[1]))
"""


@pytest.fixture(scope="module")
def client_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return client_installed(tmp_path_factory, PACKAGES)


# The search the client sends (its search criteria, as JSON).
SEARCH = {
    "filters": [{"name": "ProductName", "values": ["a"]}],
    "sort": "MinPrice DESC",
    "limit": 5,
}


def _read(client_path: Path, base: str, *via: str) -> dict[str, Any]:
    script = SCRIPT.replace("__SEARCH__", repr(SEARCH))
    return json.loads(run_client(client_path, script, base, *via))  # type: ignore[no-any-return]


@pytest.mark.slow
def test_tcgplayer_client_authenticates_and_reads_the_catalog_and_prices(
    client_path: Path,
    serve_port: int,
    nginx_socket: Path,
    bucket_nginx_socket: Path,
    sample_data: reference.Data,
) -> None:
    # nginx's host names no server: only its socket answers.
    for address, base, via in (
        (serve_port, f"http://127.0.0.1:{serve_port}/v1.39.0", ()),
        (nginx_socket, "http://nginx.invalid/v1.39.0", (str(nginx_socket),)),
        (bucket_nginx_socket, "http://nginx.invalid/v1.39.0", (str(bucket_nginx_socket),)),
    ):
        read = _read(client_path, base, *via)
        authenticated, token = read.pop("token")
        assert authenticated is True and len(token) >= 32, address  # the token it was given
        partial = read.pop("partial")
        searched = read.pop("searched")  # the client's POST, answered as ours
        target = "/v1.39.0/catalog/categories/3/search"
        got = request(address, target, "POST", body=json.dumps(SEARCH).encode())
        assert (got.status, searched) == (200, json.loads(got.body))
        for target, body in read.items():  # what the client read is the answer, unchanged
            got = request(address, f"/v1.39.0/{target}")
            assert (got.status, body) == (200, json.loads(got.body)), target
        got = request(address, "/v1.39.0/pricing/product/100001,7")
        assert (got.status, partial) == (207, [207, json.loads(got.body)])
    # and it holds the sample's catalog (the independent reference model's reading of it)
    errors = json.loads(got.body)["errors"]
    assert errors == ["No product price was found for productId 7."]
    assert read["catalog/categories/3"]["results"][0]["name"] == sample_data.categories[3]["name"]
    named = [p for p, row in sample_data.products.items() if "a" in row["name"].lower()]
    assert set(searched["results"]) <= set(named) and searched["totalItems"] >= 5
    manifest = read["catalog/categories/3/search/manifest"]["results"][0]
    sets = {i["value"] for i in manifest["filters"][1]["items"]}
    assert sets == {"All"} | {
        g["name"] for g in sample_data.groups.values() if g["categoryId"] == 3
    }
    assert read["catalog/groups/1009"]["results"][0]["categoryId"] == 3
    in_category = [p for p, row in sample_data.products.items() if row["categoryId"] == 3]
    page = read["catalog/products?categoryId=3&limit=5&offset=5"]
    assert page["totalItems"] == len(in_category) and len(page["results"]) == 5
    conditions = read["catalog/conditions"]["results"]
    assert sorted(c["conditionId"] for c in conditions) == sorted(sample_data.conditions)
    group = {p for p, row in sample_data.products.items() if row["groupId"] == 1001}
    prices = read["pricing/group/1001"]["results"]
    assert {p["productId"] for p in prices} <= group and len(prices) >= len(group)
