"""A second public client reads the catalog and the marketplace prices unchanged:
`tcgplayer-api` 0.0.3 (found with the search tool) calls every catalog and price operation it
knows with its own methods, made from its own copy of the API's description, `list_all_groups_
details` (`catalog/groups`) among them, against `pipeline serve`, the generated nginx and nginx
in front of a bucket (docs/contract.md §7, §10). It also sends each path parameter as a query
parameter, which the API ignores as an unknown one.

The package is installed by uv, at a pinned version, into a throwaway folder; without the
package index (an offline machine), the test is skipped with the reason."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.clients import client_installed, run_client
from tests.support.servers import request

PACKAGES = ("tcgplayer-api==0.0.3",)

# Its calls, each named by the client's own method, against the server argv[1] (`.../v1.39.0`),
# reached through the unix-domain socket argv[2] when given (nginx's in the tests: urllib3's
# connections are made there, the client untouched). Its token request has the live service's
# address written in (`BearerAuth.TOKEN_URL`), not its base URL: a token is given instead.
SCRIPT = """
import json, socket, sys
import urllib3.connectionpool
if len(sys.argv) > 2:
    class Unix(urllib3.connectionpool.HTTPConnectionPool.ConnectionCls):
        def _new_conn(self):
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.connect(sys.argv[2])
            return sock
    urllib3.connectionpool.HTTPConnectionPool.ConnectionCls = Unix
from tcgplayer_api.auth import BearerAuth
from tcgplayer_api.client import TCGPlayerClient

client = TCGPlayerClient(auth=BearerAuth(token="token"), api_version="v1.37.0")
client.base_url = sys.argv[1]
calls = {
    "catalog/categories/1/groups": lambda: client.list_all_category_groups(category_id=1),
    "catalog/categories/3/printings": lambda: client.list_all_category_printings(category_id=3),
    "catalog/categories/1/conditions": lambda: client.list_all_category_conditions(category_id=1),
    "catalog/categories/1/languages": lambda: client.list_all_category_languages(category_id=1),
    "catalog/categories/1,3": lambda: client.get_category_details(category_ids="1,3"),
    "catalog/groups/1001,1009": lambda: client.get_group_details(group_ids="1001,1009"),
    "catalog/groups?categoryId=3": lambda: client.list_all_groups_details(categoryId=3),
    "catalog/groups?categoryName=magic&sortOrder=abbreviation&limit=3": lambda: client.list_all_groups_details(categoryName="magic", sortOrder="abbreviation", limit=3),
    "catalog/products?categoryId=3&limit=5": lambda: client.list_all_products(categoryId=3, limit=5),
    "catalog/products/100001,300005": lambda: client.get_product_details(product_ids="100001,300005"),
    "catalog/products/100001/skus": lambda: client.list_product_skus(product_id=100001),
    "catalog/skus/5000001,5000002": lambda: client.get_sku_details(sku_ids="5000001,5000002"),
    "catalog/conditions": lambda: client.list_conditions(),
    "pricing/group/1001": lambda: client.list_product_prices_by_group(group_id=1001),
    "pricing/product/100001,100002": lambda: client.list_product_market_prices(product_ids="100001,100002"),
    "pricing/sku/5000001,5000132": lambda: client.list_sku_market_prices(sku_ids="5000001,5000132"),
}
print(json.dumps({target: call() for target, call in calls.items()}))
"""


@pytest.fixture(scope="module")
def client_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return client_installed(tmp_path_factory, PACKAGES)


@pytest.mark.slow
def test_tcgplayer_api_reads_the_catalog_and_prices(
    client_path: Path, serve_port: int, nginx_socket: Path, bucket_nginx_socket: Path
) -> None:
    # nginx's host names no server: only its socket answers.
    for address, base, via in (
        (serve_port, f"http://127.0.0.1:{serve_port}/v1.39.0", ()),
        (nginx_socket, "http://nginx.invalid/v1.39.0", (str(nginx_socket),)),
        (bucket_nginx_socket, "http://nginx.invalid/v1.39.0", (str(bucket_nginx_socket),)),
    ):
        read = json.loads(run_client(client_path, SCRIPT, base, *via))
        assert len(read) == 16
        for target, body in read.items():  # what the client read is the answer, unchanged
            got = request(address, f"/v1.39.0/{target}")
            assert (got.status, body) == (200, json.loads(got.body)), target
            assert body["results"], target
    groups = read["catalog/groups?categoryName=magic&sortOrder=abbreviation&limit=3"]
    assert groups["totalItems"] == 7  # the sample's Magic groups: DMU, ICE, LEA first
    assert [g["abbreviation"] for g in groups["results"]] == ["DMU", "ICE", "LEA"]
