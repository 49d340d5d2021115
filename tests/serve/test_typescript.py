"""TypeScript types generated from the published OpenAPI document type-check real answers: `openapi-typescript`, the most used generator, and `tsc --strict`, on
answers of every operation served by `pipeline serve` from the shipped sample, the searches'
(POSTs) included.

The two packages are installed with npm, at pinned versions, into a throwaway folder; without
node, npm or the npm registry (an offline machine), the test is skipped with the reason, and
`tests/test_openapi.py` still checks the rule these types depend on, on the document itself."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from tests.support.servers import Client

OPENAPI_TYPESCRIPT = "openapi-typescript@7.13.0"
TYPESCRIPT = "typescript@5.9.3"
VERSION = "/v1.39.0"


def _run(args: list[str], cwd: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def node_tools(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A folder with openapi-typescript and typescript installed (its node_modules/.bin)."""
    npm, node = shutil.which("npm"), shutil.which("node")
    if not npm or not node:
        pytest.skip("node and npm are not installed")
    folder = tmp_path_factory.mktemp("typescript")
    (folder / "package.json").write_text('{"private": true}')
    # What npm's cache holds is not asked of the registry again (--prefer-offline).
    install = [npm, "install", "--prefer-offline", "--no-audit", "--no-fund"]
    try:
        done = _run([*install, OPENAPI_TYPESCRIPT, TYPESCRIPT], folder, timeout=120)
    except subprocess.TimeoutExpired:
        pytest.skip("npm install took over 120 s (is the npm registry reachable?)")
    if done.returncode != 0:
        pytest.skip(f"npm install failed (offline?): {done.stderr.strip()[-300:]}")
    yield folder / "node_modules" / ".bin"


# Answers of every catalog and price operation: 200, 207, 400 and 404, the optional keys
# present and absent.
_G, _P = "/catalog/categories/{categoryId}", "/catalog/products"
CATALOG_TARGETS = [
    *((f"{_G}/groups", f"/catalog/categories/{c}/groups?limit=100") for c in (1, 3, 62, 71, 9)),
    (f"{_G}/groups", "/catalog/categories/x/groups"),
    *(
        (f"{_G}/{what}", f"/catalog/categories/{c}/{what}")
        for what in ("conditions", "languages", "printings")
        for c in (1, 3, 9)
    ),
    ("/catalog/categories/{categoryIds}", "/catalog/categories/1,2,3,62,71"),
    ("/catalog/categories/{categoryIds}", "/catalog/categories/1,9"),
    ("/catalog/groups/{groupIds}", "/catalog/groups/1001,1009,1014,7"),
    ("/catalog/groups/{groupIds}", "/catalog/groups/1001"),
    (_P, f"{_P}?limit=100&getExtendedFields=true&includeSkus=true"),
    (_P, f"{_P}?categoryId=3&limit=100"),
    (_P, f"{_P}?productName=zzzz"),
    ("/catalog/products/{productIds}", f"{_P}/100001,100002,300005?getExtendedFields=true"),
    ("/catalog/products/{productIds}", f"{_P}/100001,5?includeSkus=true"),
    ("/catalog/products/{productIds}", f"{_P}/5"),
    ("/catalog/products/{productId}/skus", f"{_P}/100001/skus"),
    ("/catalog/skus/{skuIds}", "/catalog/skus/5000001,5000002,1"),
    ("/catalog/skus/{skuIds}", "/catalog/skus/5000001"),
    ("/catalog/conditions", "/catalog/conditions"),
    *(("/pricing/group/{groupId}", f"/pricing/group/{g}") for g in (1001, 1009, 1014, 9)),
    ("/pricing/product/{productIds}", "/pricing/product/100001,100002,300005,7"),
    ("/pricing/product/{productIds}", "/pricing/product/100001"),
    ("/pricing/sku/{skuIds}", "/pricing/sku/5000001,5000132,1,1"),
    ("/pricing/sku/{skuIds}", "/pricing/sku/5000001"),
    ("/pricing/sku/{skuIds}", "/pricing/sku/" + ",".join(["1"] * 251)),
    *((f"{_G}/search/manifest", f"/catalog/categories/{c}/search/manifest") for c in (1, 3, 9)),
    ("/catalog/groups", "/catalog/groups?categoryId=3&limit=100"),
    ("/catalog/groups", "/catalog/groups?categoryId=9"),
]
# Paths of the document whose answers are no JSON envelope of a model: the bulk files, and
# the token (tests/serve/test_token.py checks its answers).
NOT_MODELLED = ("/bulk/", "/token")
# The searches (POSTs, each with its body): found, not valid, nothing found.
_C, _S = (
    "/catalog/categories/{categoryId}/search",
    ("/stores/{storeKey}/inventory/categories/{categoryId}/search"),
)
SEARCHES = [
    (_C, "/catalog/categories/1/search", b'{"limit":100,"sort":"MinPrice DESC"}'),
    (_C, "/catalog/categories/3/search", b'{"filters":[{"name":"Rarity","values":["rare"]}]}'),
    (_C, "/catalog/categories/1/search", b'{"limit":0}'),
    (_C, "/catalog/categories/9/search", b"{}"),
    (_S, "/stores/mom-and-pop/inventory/categories/3/search?skuLimit=20", b'{"limit":100}'),
    (_S, "/stores/3d05ef67/inventory/categories/1/search", b'{"sort":"ProductName ASC"}'),
    (_S, "/stores/3d05ef67/inventory/categories/1/search", b"["),
    (_S, "/stores/no-such-store/inventory/categories/1/search", b"{}"),
]


def _answers(client: Client, port: int, site: Path) -> list[tuple[str, int, bytes]]:
    """(API path template, status, body) of real answers of every operation, errors included:
    every store's first page, each of its products' SKUs and quantities, its price list,
    categories and groups, on both channels."""
    stores = sorted(p.name for p in (site / "v1.39.0" / "stores").iterdir())
    targets: list[tuple[str, str]] = [
        ("/catalog/categories", "/catalog/categories"),
        ("/catalog/categories", "/catalog/categories?sortOrder=popularity&sortDesc=true&limit=2"),
        ("/catalog/categories", "/catalog/categories?offset=100"),
        ("/catalog/categories", "/catalog/categories?sortOrder=nope"),
        *CATALOG_TARGETS,
    ]
    for store in [*stores, "no-such-store"]:
        base = f"/stores/{store}/inventory"
        for channel in (0, 1):
            query = f"channelId={channel}"
            targets += [
                ("/stores/{storeKey}/inventory/products", f"{base}/products?{query}&skuLimit=20"),
                ("/stores/{storeKey}/inventory/skuprices", f"{base}/skuprices?{query}&limit=100"),
                ("/stores/{storeKey}/inventory/categories", f"{base}/categories?{query}"),
                ("/stores/{storeKey}/inventory/groups", f"{base}/groups?{query}&limit=100"),
            ]
            page = client.request(port, f"{VERSION}{base}/products?{query}&limit=100")
            products = orjson.loads(page.body)["results"] if page.status == 200 else []
            for product in products[:25]:
                path = f"{base}/products/{product['productId']}"
                targets += [
                    (
                        "/stores/{storeKey}/inventory/products/{productId}/skus",
                        f"{path}/skus?{query}&limit=100",
                    ),
                    (
                        "/stores/{storeKey}/inventory/products/{productId}/quantity",
                        f"{path}/quantity?{query}",
                    ),
                ]
        targets += [
            ("/stores/{storeKey}/inventory/products", f"{base}/products?limit=0"),
            ("/stores/{storeKey}/inventory/products/{productId}/skus", f"{base}/products/1/skus"),
            (
                "/stores/{storeKey}/inventory/products/{productId}/quantity",
                f"{base}/products/x/quantity",
            ),
        ]
    answers = []
    for template, target in targets:
        reply = client.request(port, VERSION + target)
        answers.append((template, reply.status, reply.body))
    for template, target, body in SEARCHES:
        reply = client.request(port, VERSION + target, "POST", body=body)
        answers.append((template, reply.status, reply.body))
    return answers


def _module(answers: list[tuple[str, int, bytes]], wrong: list[tuple[str, int, bytes]]) -> str:
    """A TypeScript module that gives each answer, as JSON text, the type of its operation's
    response for its status: a missing, extra or mistyped key fails `tsc`. Each `wrong` answer
    is marked as an error `tsc` must find (`@ts-expect-error`): where it finds none, it fails."""
    lines = [
        'import type { paths } from "./api";',
        # The body of a status of a path's method: never (nothing fits it) where there is none.
        "type Of<R, S> = S extends keyof R",
        "  ? R[S] extends { content: { 'application/json': infer B } } ? B : never : never;",
        "type Body<P extends keyof paths, S extends number> =",
        "  paths[P] extends { get: { responses: infer R } } ? Of<R, S> : never;",
        "type Posted<P extends keyof paths, S extends number> =",
        "  paths[P] extends { post: { responses: infer R } } ? Of<R, S> : never;",
    ]
    posted = {template for template, _, _ in SEARCHES}
    marked = [(answer, False) for answer in answers] + [(answer, True) for answer in wrong]
    for n, ((template, status, body), expected_error) in enumerate(marked):
        if expected_error:
            lines.append("// @ts-expect-error: the answer is not of its operation's type")
        kind = "Posted" if template in posted else "Body"
        lines.append(f'export const a{n}: {kind}<"{template}", {status}> = {body.decode()};')
    return "\n".join(lines) + "\n"


def _check(tools: Path, folder: Path, module: str) -> subprocess.CompletedProcess[str]:
    (folder / "answers.ts").write_text(module, encoding="utf-8")
    return _run(
        [str(tools / "tsc"), "--strict", "--noEmit", "--skipLibCheck", "answers.ts"],
        folder,
        timeout=120,
    )


@pytest.mark.slow
def test_generated_typescript_types_read_real_answers_of_every_operation(
    node_tools: Path, sample_build: Path, serve_port: int, client: Client, tmp_path: Path
) -> None:
    document = sample_build / "site" / "v1.39.0" / "help" / "openapi.json"
    done = _run(
        [str(node_tools / "openapi-typescript"), str(document), "-o", str(tmp_path / "api.d.ts")],
        tmp_path,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    answers = _answers(client, serve_port, sample_build / "site")
    operations = {t for t, status, _ in answers if status == 200}
    paths = orjson.loads(document.read_bytes())["paths"]
    assert operations == {p for p in paths if not p.startswith(NOT_MODELLED)}
    assert {status for _, status, _ in answers} == {200, 207, 400, 404}
    for entry in (b'"isCustom":true', b'"isCustom":false'):  # custom and generic entries
        assert any(entry in body for _, _, body in answers)
    # The check has teeth: a quantity as text and an unknown key both fail, in the same run.
    wrong = [
        ("/stores/{storeKey}/inventory/products/{productId}/quantity", 200, body)
        for body in (
            b'{"success":true,"errors":[],"results":[{"productId":1,"totalQuantity":1,'
            b'"skus":[{"skuId":1,"quantity":"1","isCustom":false}]}]}',
            b'{"success":true,"errors":[],"results":[{"productId":1,"totalQuantity":1,'
            b'"skus":[{"skuId":1,"quantity":1,"isCustom":false,"colour":"red"}]}]}',
        )
    ]
    checked = _check(node_tools, tmp_path, _module(answers, wrong))
    assert checked.returncode == 0, checked.stdout[-3000:]
