"""The bulk files through `pipeline serve` and the generated nginx: each file's bytes with its
content type, the same from both; any other name under the bulk folder is 404, never live; one
byte range answered alike, and read by polars and pyarrow from a URL."""

from __future__ import annotations

from pathlib import Path

import orjson
from click.testing import CliRunner

from pipeline import cli
from pipeline.api.responses import CSV, JSON, PARQUET, RANGE_NOT_SATISFIABLE, URL_NOT_FOUND
from tests.support.around import assert_http_around
from tests.support.ranges import assert_libraries_read, range_headers, tcp_to
from tests.support.servers import Client, Reply, both, envelope, request, running_nginx
from tests.support.targets import bulk_targets

TYPES = {".csv": CSV, ".parquet": PARQUET, ".json": JSON}
# The headers of the connection and the moment, and the server's name.
PER_SEND = ("date", "connection", "server")


def sent(reply: Reply) -> dict[str, str]:
    return {k: v for k, v in reply.headers.items() if k not in PER_SEND}


def test_every_bulk_file_from_both_servers_with_its_content_type(
    nginx_socket: Path, serve_port: int, sample_build: Path
) -> None:
    targets = bulk_targets(sample_build)
    assert {t.rpartition(".")[2] for t in targets} == {"csv", "parquet", "json"}
    for target in targets:
        got, _ = both(nginx_socket, serve_port, target)
        kind = TYPES["." + target.rpartition(".")[2]]
        body = (sample_build / "site" / target.lstrip("/")).read_bytes()
        assert (got.status, got.content_type, got.body) == (200, kind, body), target
    got, _ = both(nginx_socket, serve_port, targets[0] + "/")
    assert got.status == 200


def test_other_names_under_the_bulk_folder_are_404(nginx_socket: Path, serve_port: int) -> None:
    for target in (
        "/v1.39.0/bulk/99.parquet",
        "/v1.39.0/bulk/1/99.csv",
        "/v1.39.0/bulk/01.parquet",
        "/v1.39.0/bulk/1.csv",
        "/v1.39.0/bulk/1/1001.json",
        "/v1.39.0/bulk",
        "/v1.39.0/bulk/",
        "/v1.39.0/bulk/index.json?x=1&offset=abc",
    ):
        got, _ = both(nginx_socket, serve_port, target)
        if target.endswith("?x=1&offset=abc"):
            assert got.status == 200, target  # a query string is ignored, as by a file
            continue
        assert (got.status, orjson.loads(got.body)) == (404, envelope(URL_NOT_FOUND)), target
    got, _ = both(nginx_socket, serve_port, "/v1.39.0/bulk/index.json", method="POST")
    assert got.status == 405


def test_nginx_serves_the_bulk_files_with_no_upstream(sample_build: Path, tmp_path: Path) -> None:
    nobody = tmp_path / "nobody.sock"
    with running_nginx(tmp_path / "nginx", sample_build / "site", f"unix:{nobody}") as sock:
        for target in bulk_targets(sample_build):
            got = request(sock, target)
            assert (got.status, got.body) == (
                200,
                (sample_build / "site" / target.lstrip("/")).read_bytes(),
            ), target


def test_a_bulk_file_has_the_http_around_the_bytes_on_both_servers(
    nginx_socket: Path, serve_port: int, sample_build: Path
) -> None:
    """A CSV is compressed for a client that accepts it, a Parquet file (compressed already)
    never; both have an ETag that revalidates, the same from both servers."""
    targets = bulk_targets(sample_build)
    csv = next(t for t in targets if t.endswith(".csv"))
    parquet = next(t for t in targets if t.endswith(".parquet"))
    site = sample_build / "site"
    etags = {
        address: assert_http_around(address, csv, (site / csv.lstrip("/")).read_bytes())
        for address in (nginx_socket, serve_port)
    }
    assert etags[nginx_socket] == etags[serve_port]
    for address in (nginx_socket, serve_port):
        got = request(address, parquet, headers={"Accept-Encoding": "gzip"})
        assert "content-encoding" not in got.headers
        assert got.body == (site / parquet.lstrip("/")).read_bytes()
        again = request(address, parquet, headers={"If-None-Match": got.headers["etag"]})
        assert (again.status, again.body) == (304, b"")


def test_bulk_files_and_pages_answer_one_byte_range_alike_on_both_servers(
    nginx_socket: Path, serve_port: int, sample_build: Path, client: Client
) -> None:
    """One range is 206 with its bytes and Content-Range; past the end 416 with `bytes */size`
    and the envelope; several, or an If-Range that is not the ETag, the whole body with
    Accept-Ranges; a Parquet file is never compressed, a CSV compressed is whole. Every Range
    header gets the same status, headers and body from both servers."""
    targets = bulk_targets(sample_build)
    csv = next(t for t in targets if t.endswith(".csv"))
    parquet = next(t for t in targets if t.endswith(".parquet"))
    site = sample_build / "site"
    for target in (parquet, csv, "/v1.39.0/stores/tiny7/inventory/products"):
        file = site / (target.lstrip("/") + ("/index.json" if "stores" in target else ""))
        body = file.read_bytes()
        etag = request(serve_port, target).headers["etag"]
        for asked in range_headers(len(body)):
            for headers in ({"Range": asked}, {"Range": asked, "If-Range": etag}):
                a, b = both(nginx_socket, serve_port, target, client, headers=headers)
                assert sent(a) == sent(b), (target, headers)
        part = request(serve_port, target, headers={"Range": "bytes=2-11"})
        assert (part.status, part.body) == (206, body[2:12])
        assert part.headers["content-range"] == f"bytes 2-11/{len(body)}"
        assert "accept-ranges" not in part.headers
        past = request(serve_port, target, headers={"Range": f"bytes={len(body)}-"})
        assert (past.status, past.headers["content-range"]) == (416, f"bytes */{len(body)}")
        assert orjson.loads(past.body) == envelope(RANGE_NOT_SATISFIABLE)
        assert "no-store" in past.headers["cache-control"] and "etag" not in past.headers
        for whole in ({"Range": "bytes=0-1,4-5"}, {"Range": "bytes=0-1", "If-Range": '"x"'}):
            got = request(serve_port, target, headers=whole)
            assert (got.status, got.body, got.headers["accept-ranges"]) == (200, body, "bytes")
        same = request(serve_port, target, headers={"Range": "bytes=0-1", "If-Range": etag})
        assert (same.status, same.body) == (206, body[:2])
    for address in (nginx_socket, serve_port):
        zipped = {"Range": "bytes=0-3", "Accept-Encoding": "gzip"}
        got = request(address, parquet, headers=zipped)
        assert (got.status, got.body) == (206, (site / parquet.lstrip("/")).read_bytes()[:4])
        got = request(address, csv, headers=zipped)
        assert (got.status, got.headers["content-encoding"]) == (200, "gzip")
        assert "accept-ranges" not in got.headers


def test_http_clients_read_the_bulk_files_from_their_urls_on_both_servers(
    nginx_socket: Path, serve_port: int, sample_build: Path
) -> None:
    """polars' read_csv, read_parquet and scan_parquet (ranges: the footer first) and pyarrow
    through fsspec read each bulk file's URL as its file, from `pipeline serve` and nginx."""
    targets = bulk_targets(sample_build)
    csv = next(t for t in targets if t.endswith(".csv"))
    parquet = next(t for t in targets if t.endswith(".parquet"))
    site = sample_build / "site"
    assert_libraries_read(f"http://127.0.0.1:{serve_port}", site, csv, parquet)
    with tcp_to(nginx_socket) as port:
        assert_libraries_read(f"http://127.0.0.1:{port}", site, csv, parquet)


def test_pipeline_query_answers_every_bulk_file_as_serve_does(
    serve_port: int, sample_build: Path
) -> None:
    """`pipeline query` answers every GET URL `pipeline serve` answers: a bulk file's bytes on
    standard output, exit 0 (the command in this process: the answer is its work)."""
    targets = bulk_targets(sample_build)
    for target in [*targets[:2], targets[-1], "/v1.39.0/bulk/99.parquet"]:
        served = request(serve_port, target)
        result = CliRunner().invoke(cli.main, ["query", "--output", str(sample_build), target])
        assert (result.exit_code, result.stdout_bytes) == (
            0 if served.status == 200 else 1,
            served.body,
        ), target
        assert result.stderr == f"HTTP {served.status}\n"
