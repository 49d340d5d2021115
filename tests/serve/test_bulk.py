"""The bulk files through `pipeline serve` and the generated nginx: each file's bytes with its
content type, the same from both; any other name under the bulk folder is 404, never live."""

from __future__ import annotations

from pathlib import Path

import orjson
from click.testing import CliRunner

from pipeline import cli
from pipeline.api.responses import CSV, JSON, PARQUET, URL_NOT_FOUND
from tests.support.around import assert_http_around
from tests.support.servers import both, envelope, request, running_nginx
from tests.support.targets import bulk_targets

TYPES = {".csv": CSV, ".parquet": PARQUET, ".json": JSON}


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
