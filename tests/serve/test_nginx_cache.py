"""nginx's cache of the live answers (`proxy_cache_path`): bounded by a setting, and keyed on what
decides an answer, so that parameters the API ignores share one entry while every answer stays
the upstream's own."""

from __future__ import annotations

import re
from contextlib import ExitStack
from pathlib import Path

import pytest

from pipeline.export.nginx import write_nginx_conf
from pipeline.paths import NGINX_CACHE
from pipeline.settings import ServeSettings, load_settings
from tests.support.servers import Client, nginx_on, request, running_nginx

# Answered live whatever the query string: a store key nginx reads no file for (upper case).
LIVE = "/v1.39.0/stores/TINY7/inventory/products"
# Query strings the API reads alike or otherwise: names in any case, the first of repeated ones,
# an empty value (with `=` or without) against an absent one, escapes nginx does not read
# (an escaped name, a value that is not UTF-8), pairs the API ignores, and names that only
# start or end as a parameter's.
QUERIES = [
    "",
    "limit=2",
    "LIMIT=2",
    "Limit=2&limit=3",
    "limit=3&limit=2",
    "limit=",
    "limit",
    "limit&limit=2",
    "&&limit=2&",
    "z=1&limit=2",
    "limit=2&z=1",
    "%6cimit=3",
    "limit=3&%6cimit=2",
    "limit=2&z=%FF",
    "z=%FF",
    "limit=%32",
    "xlimit=3",
    "limit+=3",
    "limitx=3",
    "sort=name&limit=2",
    "sortorder=name&limit=2",
    "skuLimit=1&limit=2",
    "productName=a+b",
    "productname=a%20b&limit=1",
]


def cached_files(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file()]


def test_parameters_the_api_ignores_share_one_entry_and_every_answer_is_the_upstreams(
    sample_build: Path, serve_port: int, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """200 requests that differ by a parameter the API ignores (`z=N`) make one entry in the
    cache's folder; every query string of `QUERIES`, asked in turn, twice, through nginx, gets
    what `pipeline serve` answers it, so that no two answers the API tells apart share an
    entry. The cache is bounded by `serve.nginx_cache_mb` (nginx's `max_size`)."""
    workdir = tmp_path_factory.mktemp("nc")
    limits = ServeSettings(nginx_cache_mb=5)
    client = Client()
    with running_nginx(workdir, sample_build / "site", f"127.0.0.1:{serve_port}", limits) as nginx:
        conf = (workdir / "site.conf").read_text()
        (line,) = re.findall(r"^proxy_cache_path .*$", conf, re.MULTILINE)
        assert " max_size=5m " in line, line
        first = client.request(serve_port, f"{LIVE}?limit=2")
        assert first.status == 200
        for n in range(200):
            got = client.request(nginx, f"{LIVE}?limit=2&z={n}")
            assert (got.status, got.body) == (200, first.body), n
        assert len(cached_files(workdir / "cache")) == 1
        for query in QUERIES * 2:
            target = f"{LIVE}?{query}" if query else LIVE
            ours, theirs = request(serve_port, target), client.request(nginx, target)
            assert (theirs.status, theirs.body) == (ours.status, ours.body), target
    client.close()


def test_two_outputs_side_by_side_keep_their_live_answers_in_folders_of_their_own(
    sample_build: Path, sample_nights: Path, serve_port: int, tmp_path: Path
) -> None:
    """Two outputs' nginx.conf as their builds write them, with the default `serve.nginx_cache`,
    run at once by two nginx: each keeps its live answers in a folder of its own inside its
    output (`OUTPUT/nginx-cache`), which nginx creates, and both answer live."""
    confs = []
    for name, built in (("a", sample_build), ("b", sample_nights)):
        output = tmp_path / name
        output.mkdir()
        (output / "site").symlink_to((built / "site").resolve())
        settings = load_settings(
            None,
            output=output,
            serve={
                "nginx_listen": f"unix:{output / 'nginx.sock'}",
                "nginx_upstream": f"127.0.0.1:{serve_port}",
            },
        )
        write_nginx_conf(output, settings)
        confs.append(output)
    folders = [
        re.findall(r'^proxy_cache_path "([^"]+)"', (o / "nginx.conf").read_text(), re.M)[0]
        for o in confs
    ]
    assert folders == [str(o.absolute() / NGINX_CACHE) for o in confs]
    with ExitStack() as stack:
        socks = [
            stack.enter_context(nginx_on(o, o / "nginx.conf", o / "nginx.sock")) for o in confs
        ]
        for sock, output in zip(socks, confs, strict=True):
            for _ in range(2):
                assert request(sock, f"{LIVE}?limit=2").status == 200
            assert len(cached_files(output / NGINX_CACHE)) == 1, output
