"""nginx serves a materialised page from its file whenever the parameters the operation defines
name it, whatever else the query string carries: a client library that adds
`store_key=` or `sortOrder=` to every call, a default written out, a parameter in another case.
What nginx cannot read as the API does goes to the live upstream. Real nginx, as in
`test_serve.py`: with the preview server behind it the answers are the same bytes, and with no
upstream at all the pages still come from their files."""

from __future__ import annotations

import http.server
import re
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from pipeline.api.responses import JSON, UNAVAILABLE
from pipeline.errors import BuildError
from pipeline.export import nginx
from pipeline.export.nginx.syntax import quoted
from tests.support.servers import NGINX, Client, envelope, request, running_nginx
from tests.support.targets import live_locations, live_requests, materialised_targets

PRODUCTS = "/v1.39.0/stores/tiny7/inventory/products"
CATEGORIES = "/v1.39.0/catalog/categories"

# Pairs the API ignores or reads as the page's own parameters: each keeps the page's file.
EXTRA = [
    "store_key=tiny7",
    "sortOrder=name",
    "StoreKey=",
    "sortorder=price&sortDesc=true",
    "x=%C3%A9t%C3%A9&y",
    "foo",
    "=5",
    "",
    "&",
    "format=json&api_key=a+b%20c&callback=f.g-h_i~j",
]
# The operation's own parameters written otherwise, with their page's canonical query.
SPELLED = [
    ("skuLimit=3&includeGeneric=TRUE&includeCustom=true&includeExcludedCategories=False", ""),
    ("sort=price+desc", ""),
    ("SORT=%20Price%20%20DESC%09", ""),
    ("sort=minprice%20desc&CHANNELID=000", ""),
    ("offset=10&Offset=abc&LIMIT=10", "offset=10"),
]
# What nginx cannot read as the API does: the live upstream answers (a 400, another page).
LIVE = [
    "categoryId=",  # empty: a 400
    "categoryId",  # no value at all: a 400 as well
    "%63ategoryId=3",  # an escaped name is still the parameter's
    "x=%FF",  # not UTF-8 once decoded: a 400, whatever the parameter
    "x=%C3",
    "sort=name%09desc",
    "includeGeneric=yes",
    "productName=",
    "sort=name",  # another combination, not materialised
    "categoryId=1234567890",
]


def _page(sample_build: Path, target: str) -> bytes | None:
    path, _, query = target.partition("?")
    file = sample_build / "site" / path.lstrip("/") / f"{query or 'index'}.json"
    return file.read_bytes() if file.is_file() else None


def _with(target: str, extra: str) -> str:
    joiner = "&" if "?" in target else "?"
    return f"{target}{joiner}{extra}" if extra else target


@pytest.fixture(scope="module")
def nginx_alone(sample_build: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """nginx with an upstream nothing listens on: only its files answer (503 otherwise)."""
    workdir = tmp_path_factory.mktemp("alone")
    with running_nginx(
        workdir / "nginx", sample_build / "site", f"unix:{workdir / 'no.sock'}"
    ) as s:
        yield s


def _cases(sample_build: Path) -> list[tuple[str, str]]:
    """(request, the materialised page it names) for a sample of pages and every extra pair."""
    targets = materialised_targets(sample_build)
    pages = [t for t in targets if "/stores/" in t][::37]
    pages += [t for t in targets if "categoryId=" in t][:3]
    cases = [(_with(page, extra), page) for page in pages for extra in EXTRA]
    # The category listing defines sortOrder and sortDesc (docs/contract.md §6): only other pairs here.
    cases += [(_with(CATEGORIES, e), CATEGORIES) for e in EXTRA if "sort" not in e.lower()]
    paged = next(t for t in targets if t.endswith("/products?offset=10"))
    products = paged.partition("?")[0]  # a store with a second page
    spelled = [(q, products + (f"?{c}" if c else "")) for q, c in SPELLED]
    filtered = next(t for t in targets if re.search(r"\?categoryId=[0-9]+$", t))
    query = filtered.partition("?")[2]
    spelled.append((f"{query.replace('=', '=000')}&categoryid=-1&CategoryId=x", filtered))
    for query, page in spelled:
        target = f"{page.partition('?')[0]}?{query}"
        cases += [(target, page), (f"{target}&store_key=x", page)]
    cases.append((f"{CATEGORIES}?store_key=x&OFFSET=0&limit=010", CATEGORIES))
    return cases


def test_pages_come_from_their_files_whatever_else_the_query_carries(
    sample_build: Path, nginx_alone: Path, client: Client
) -> None:
    for target, page in _cases(sample_build):
        body = _page(sample_build, page)
        assert body is not None, page
        got = client.request(nginx_alone, target)
        assert (got.status, got.body) == (200, body), target


@pytest.mark.parametrize("query", LIVE)
def test_what_nginx_cannot_read_goes_to_the_upstream(
    nginx_alone: Path, nginx_socket: Path, serve_port: int, query: str
) -> None:
    target = f"{PRODUCTS}?{query}"
    assert request(nginx_alone, target).status == 503, "answered without the upstream"
    a, b = request(nginx_socket, target), request(serve_port, target)
    assert (a.status, a.content_type, a.body) == (b.status, b.content_type, b.body), target


def test_nginx_and_the_preview_server_agree_on_extra_parameters(
    sample_build: Path, nginx_socket: Path, serve_port: int, client: Client
) -> None:
    cases = _cases(sample_build)
    for target in [t for t, _ in cases] + [f"{PRODUCTS}?{q}&store_key=x" for q in LIVE]:
        a, b = client.request(nginx_socket, target), client.request(serve_port, target)
        assert (a.status, a.content_type, a.body) == (b.status, b.content_type, b.body), target


def test_nginx_keeps_its_connections_to_the_live_upstream(
    sample_build: Path, tmp_path: Path
) -> None:
    """Live answers one after the other reuse one upstream connection (a connect and
    an accept per live answer cost the server throughput); each answer is still relayed whole."""
    accepted: list[int] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as waitress

        def setup(self) -> None:
            accepted.append(1)
            super().setup()

        def do_GET(self) -> None:
            body = f'{{"path":"{self.path}"}}'.encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    upstream = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    try:
        address = f"127.0.0.1:{upstream.server_address[1]}"
        with running_nginx(tmp_path / "nginx", sample_build / "site", address) as sock:
            targets = [f"{PRODUCTS}?sort=name&offset={n}" for n in range(3)]
            replies = [request(sock, target) for target in targets]
    finally:
        upstream.shutdown()
        upstream.server_close()
    assert [r.status for r in replies] == [200, 200, 200]
    assert [r.body for r in replies] == [f'{{"path":"{t}"}}'.encode() for t in targets]
    assert len(accepted) == 1


def test_every_way_to_the_live_upstream_is_probed() -> None:
    """Each location that may go to `@live` is matched by one of `live_requests`, so that a
    location added to the configuration is probed below (or this fails)."""
    conf = nginx.render(Path("/srv/site"), "127.0.0.1:8080", "127.0.0.1:8000")
    paths = [target.partition("?")[0] for target, _ in live_requests()]
    for location in live_locations(conf):
        assert any(location.fullmatch(path) for path in paths), location.pattern


@pytest.mark.parametrize(("target", "headers"), live_requests())
def test_the_live_upstream_down_is_503_with_the_envelope_everywhere(
    nginx_alone: Path, target: str, headers: dict[str, str]
) -> None:
    """Whichever location sends a request to the live upstream (a missing file, a store key
    nginx reads no file for, a request with a precondition), nginx answers its failure with
    the error envelope's 503, not its own HTML 502."""
    got = request(nginx_alone, target, headers=headers)
    assert (got.status, got.content_type, orjson.loads(got.body)) == (
        503,
        JSON,
        envelope(UNAVAILABLE),
    )


def test_a_site_folder_of_any_name_is_written_by_nginx_grammar(tmp_path: Path) -> None:
    """Spaces, quotes, `;`, braces, `#` and backslashes in the folder: `nginx -t` accepts the
    configuration; a `$`, which nginx would read as a variable, is refused by name."""
    site = tmp_path / 'a "b";{c} #d\\e\\t'
    conf = nginx.render(
        site, f"unix:{tmp_path / 'n.sock'}", "127.0.0.1:9", cache=tmp_path / "cache"
    )
    (tmp_path / "site.conf").write_text(conf)
    (tmp_path / "main.conf").write_text(
        f"pid {tmp_path / 'pid'};\nevents {{ }}\nhttp {{ include {tmp_path / 'site.conf'}; }}\n"
    )
    assert NGINX
    checked = subprocess.run(
        [
            NGINX,
            "-t",
            "-p",
            str(tmp_path),
            "-c",
            str(tmp_path / "main.conf"),
            "-e",
            str(tmp_path / "e.log"),
        ],
        capture_output=True,
        text=True,
    )
    assert checked.returncode == 0, checked.stderr
    assert f"root {quoted(str(site))};" in conf
    with pytest.raises(BuildError, match=re.escape("the site's folder '/srv/$site'")):
        nginx.render(Path("/srv/$site"), "127.0.0.1:8080", "127.0.0.1:9")
