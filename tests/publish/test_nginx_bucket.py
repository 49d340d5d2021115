"""nginx in front of the test S3 server (`pipeline nginx-bucket`): every URL of the sample's
site answers byte for byte as local nginx serving the local release does, through the
committed release's map; a publish that moves the pointer changes nothing until the map is
written again and nginx reloaded."""

from __future__ import annotations

import gzip
import hashlib
import re
import subprocess
from collections.abc import Iterator
from contextlib import AbstractContextManager, ExitStack
from pathlib import Path

import obstore as obs
import orjson
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from pipeline.api.http import body_etag
from pipeline.api.responses import JSON, UNAVAILABLE
from pipeline.api.urls import HELP_PATH, OPENAPI_PATH
from pipeline.contract import STORE_KEY_PATTERN, STORED_KEY_PATTERN
from pipeline.errors import BuildError
from pipeline.export import nginx
from pipeline.export.nginx.bucket import BucketOrigin, release_map
from pipeline.publish.bucket import open_bucket
from pipeline.publish.objectstore import publish_release
from pipeline.serve.reader import RELEASE_MAP, BucketReader, resolve, site_path, write_nginx
from pipeline.settings import ServeSettings
from tests.support.around import (
    assert_error_headers,
    assert_fresh,
    assert_http_around,
    publish_ahead,
)
from tests.support.heads import Generated, Kinds, RawClient, compared, heads
from tests.support.proxy import fork_cli
from tests.support.ranges import assert_libraries_read, range_headers, tcp_to
from tests.support.s3 import S3Server, readable
from tests.support.servers import (
    NGINX,
    envelope,
    nginx_main_conf,
    nginx_on,
    preview_server,
    request,
    running_nginx,
)
from tests.support.targets import (
    bulk_targets,
    live_locations,
    live_requests,
    materialised_targets,
)

# Besides every materialised page: spellings, parameters and stores no object answers, which
# both send to the live upstream, and paths that are errors.
OTHERS = [
    HELP_PATH,
    OPENAPI_PATH,
    "/v1.39.0/stores/3D05EF67/inventory/products",
    "/v1.39.0/stores/3d05ef67/inventory/products/?LIMIT=10&offset=0&limit=5",
    "/v1.39.0/stores/3d05ef67/inventory/products?productName=dragon",
    "/v1.39.0/stores/3d05ef67/inventory/products?offset=abc",
    "/v1.39.0/stores/nobody/inventory/products",
    "/v1.39.0/stores/3d05ef67/inventory/categories?channelId=1",
    "/v1.39.0/stores/3d05ef67/inventory/skuprices",
    "/v1.39.0/catalog/categories?sortDesc=true",
    "/v1.39.0/catalog/categories/1/groups?limit=3&offset=3",
    "/v1.39.0/catalog/products/100001,5?getExtendedFields=true",
    "/v1.39.0/pricing/sku/5000001,5000132",
    "/v1.39.0/pricing/group/0001001",
    "/v1.39.0/pricing/group/x",
    "/v1.39.0/nowhere",
    "/current/stores/3d05ef67/inventory/products",
]

# A search of each kind, a bad body, a GET of a search, a POST of a page, and a body one byte
# past `serve.max_request_body_size` (its Content-Length alone is sent: refused unread).
_SEARCH = "/v1.39.0/catalog/categories/3/search"
SEARCHES = [
    (_SEARCH, "POST", b'{"filters":[{"name":"ProductName","values":["a"]}],"sort":"MinPrice ASC"}'),
    ("/v1.39.0/stores/3d05ef67/inventory/categories/1/search?skuLimit=1", "POST", b"{}"),
    (_SEARCH, "POST", b"{"),
    (_SEARCH, "GET", None),
    ("/v1.39.0/stores/tiny7/inventory/products", "POST", b"{}"),
]


def cached(folder: Path) -> ServeSettings:
    """The `serve` settings with nginx's cache of the live answers in `folder`."""
    return ServeSettings(nginx_cache=folder / "cache")


def bucket_nginx(folder: Path, more: str = "") -> AbstractContextManager[Path]:
    """nginx on the configuration `pipeline nginx-bucket` wrote into `folder` (with `more` in
    `http { }`), on a unix socket there."""
    return nginx_on(folder, folder / "nginx.conf", folder / "nginx.sock", more)


@pytest.fixture(scope="module")
def sample_bucket(s3: S3Server, sample_build: Path) -> str:
    """The sample's build published into a readable bucket of its own, for the tests that only
    read it: its URL."""
    url = s3.bucket("sample")
    readable(s3, url)
    publish_release((sample_build / "current").resolve(), url)
    return url


def test_nginx_in_front_of_the_bucket_answers_as_local_nginx_and_one_release_at_a_time(
    s3: S3Server,
    sample_build: Path,
    serve_port: int,
    sample_nights: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    url = s3.bucket("served")
    readable(s3, url)
    first = (sample_build / "current").resolve()
    publish_release(first, url)
    folder = tmp_path_factory.mktemp("nb")  # short: a unix socket's path has 108 bytes at most
    listen = f"unix:{folder / 'nginx.sock'}"
    bulk = bulk_targets(sample_build)  # the bulk files, with their own content types
    materialised = [*materialised_targets(sample_build), HELP_PATH, OPENAPI_PATH, *bulk]
    port = serve_port
    with running_nginx(
        tmp_path_factory.mktemp("local"), sample_build / "site", f"127.0.0.1:{port}"
    ) as local:
        # With no live upstream (a socket nobody listens on), every page comes from the bucket.
        no_live = f"unix:{folder / 'nobody.sock'}"
        done = fork_cli(
            "nginx-bucket",
            "--to",
            url,
            "--dir",
            str(folder),
            "--listen",
            listen,
            "--upstream",
            no_live,
            env={"PIPELINE_SERVE__NGINX_CACHE": str(folder / "cache")},
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith(f"{folder / 'release.map'}: release {first.name}.")
        with bucket_nginx(folder) as bucket:
            for target in materialised:
                a, b = request(local, target), request(bucket, target)
                assert a.status == 200, target
                assert (a.status, a.content_type, a.body) == (b.status, b.content_type, b.body), (
                    target
                )
        # With `pipeline serve` behind it, what no object answers is answered live, as locally.
        assert write_nginx(url, folder, listen, f"127.0.0.1:{port}", cached(folder))
        with bucket_nginx(folder) as bucket:
            for target in [*materialised[::5], *OTHERS]:
                a, b = request(local, target), request(bucket, target)
                assert (a.status, a.content_type, a.body) == (b.status, b.content_type, b.body), (
                    target
                )
            # The searches are passed on with their bodies, answered anew, as locally.
            for target, method, body in SEARCHES:
                a = request(local, target, method, body=body)
                b = request(bucket, target, method, body=body)
                assert (a.status, a.body) == (b.status, b.body), (target, body)
                assert b.headers["cache-control"] == "no-store" and "etag" not in b.headers
            too_large = {"Content-Length": str(ServeSettings().max_request_body_size + 1)}
            assert request(bucket, _SEARCH, "POST", too_large).status == 413
            # The next release is committed: nginx answers the one it loaded until the map is
            # written again and nginx reloaded.
            second = (sample_nights / "current").resolve()
            # Built whenever the session first asked for `sample_nights`: maybe before the
            # sample's build, an older build id.
            publish_release(second, url, allow_older=True)
            assert BucketReader(url).snapshot().build_id == second.name  # type: ignore[union-attr]
            cellar = [t for t in materialised if "/stores/card-cellar/" in t]
            assert cellar
            old = {t: request(local, t).body for t in cellar}
            for target in cellar:
                assert request(bucket, target).body == old[target], target
        assert write_nginx(url, folder, listen, no_live, cached(folder))
        with bucket_nginx(folder) as bucket:
            site = sample_nights / "site"
            for target in cellar:
                path, _, query = target.partition("?")
                file = site / (path.lstrip("/") + "/" + (query or "index") + ".json")
                assert request(bucket, target).body == file.read_bytes(), target
            assert any(request(bucket, t).body != old[t] for t in cellar)  # new prices


def test_nginx_in_front_of_the_bucket_sends_the_http_around_the_bytes(
    sample_bucket: str, sample_build: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A page's ETag is its object's (S3's: the MD5 of its bytes), a live answer's a hash of its
    bytes, each with 304, gzip, freshness until the next publish, CORS and HEAD as locally, and
    a preflight's 204; errors no-store with CORS; a live answer asked again comes from nginx's
    cache, `pipeline serve` stopped."""
    url = sample_bucket
    folder = tmp_path_factory.mktemp("na")
    page = "/v1.39.0/stores/tiny7/inventory/products"
    body = (sample_build / "site" / site_path_of(page)).read_bytes()
    live = "/v1.39.0/stores/tiny7/inventory/products?limit=2"
    with ExitStack() as stack:
        with preview_server(sample_build) as port:
            listen = f"unix:{folder / 'nginx.sock'}"
            at = publish_ahead(request(port, HELP_PATH))
            limits = ServeSettings(nginx_cache=folder / "cache", publish_at=at)
            assert write_nginx(url, folder, listen, f"127.0.0.1:{port}", limits)
            bucket = stack.enter_context(bucket_nginx(folder))
            etag = assert_http_around(bucket, page, body, at)
            assert etag == f'"{hashlib.md5(body).hexdigest()}"'
            answered = request(port, live).body
            assert assert_http_around(bucket, live, answered, at) == body_etag(answered)
            asked = {"Access-Control-Request-Headers": "if-none-match,range"}
            preflight = request(bucket, page, method="OPTIONS", headers=asked)
            assert (preflight.status, preflight.body) == (204, b"")
            assert preflight.headers["access-control-allow-headers"] == "if-none-match,range"
            assert preflight.headers["access-control-allow-methods"] == "GET, HEAD, POST, OPTIONS"
            assert_fresh(preflight, at)
            for target, method in [
                ("/v1.39.0/nowhere", "GET"),
                ("/v1.39.0/stores/nobody/inventory/products", "GET"),
                (page, "POST"),
            ]:
                got = request(bucket, target, method=method, headers={"Accept-Encoding": "gzip"})
                assert got.status in (404, 405)
                assert_error_headers(got)
        again = request(bucket, live)
        assert (again.status, again.body) == (200, answered)
        assert request(bucket, "/v1.39.0/stores/tiny7/inventory/products?limit=4").status == 503


def test_nginx_in_front_of_the_bucket_answers_byte_ranges_to_http_clients(
    sample_bucket: str,
    sample_build: Path,
    serve_port: int,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """A bulk file's object answers one byte range as `pipeline serve` answers its file (206,
    416, several ranges whole, If-Range on each one's own ETag), and polars and pyarrow read
    the bulk files from their URLs, with no live upstream at all."""
    folder = tmp_path_factory.mktemp("nr")
    listen, nobody = f"unix:{folder / 'nginx.sock'}", f"unix:{folder / 'nobody.sock'}"
    assert write_nginx(sample_bucket, folder, listen, nobody, cached(folder))
    targets = bulk_targets(sample_build)
    csv = next(t for t in targets if t.endswith(".csv"))
    parquet = next(t for t in targets if t.endswith(".parquet"))
    site = sample_build / "site"
    with bucket_nginx(folder) as bucket:
        for target in (csv, parquet):
            length = len((site / target.lstrip("/")).read_bytes())
            etags = {a: request(a, target).headers["etag"] for a in (bucket, serve_port)}
            for asked in range_headers(length):
                for if_range in (False, True):
                    got = {
                        a: request(
                            a,
                            target,
                            headers={"Range": asked} | ({"If-Range": e} if if_range else {}),
                        )
                        for a, e in etags.items()
                    }
                    a, b = got[bucket], got[serve_port]
                    assert (a.status, a.body) == (b.status, b.body), (target, asked)
                    for name in ("content-range", "accept-ranges", "content-type"):
                        assert a.headers.get(name) == b.headers.get(name), (target, asked, name)
        with tcp_to(bucket) as port:
            assert_libraries_read(f"http://127.0.0.1:{port}", site, csv, parquet)


# --- what is written into nginx's files ----------------------------------------------------------

# Words a map reads as its own parameters, and keys beyond the contract's pattern (a release
# document written otherwise): a regular expression's `~`, a backslash, quotes, braces.
KEYWORDS = ["default", "include", "hostnames", "volatile"]
store_keys = st.one_of(
    st.sampled_from(KEYWORDS),
    st.from_regex(STORED_KEY_PATTERN, fullmatch=True),
    st.from_regex(STORE_KEY_PATTERN, fullmatch=True),
    st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E), min_size=1, max_size=12),
    st.from_regex(r"~[A-Za-z0-9_-]{0,8}|\\[A-Za-z0-9_\\-]{0,8}", fullmatch=True),
)
versions = st.from_regex(r"[0-9a-f]{16}-[0-9a-z]{1,12}", fullmatch=True)
# A server beside the API's that answers a store key (header X-Store) with its version.
PROBE = (
    "server {{ listen unix:{sock}; location / {{ set $bk_store $http_x_store; "
    'return 200 "[$bk_version]"; }} }}'
)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    stores=st.dictionaries(store_keys, versions, min_size=1, max_size=6).filter(
        lambda d: len({k.lower() for k in d}) == len(d)  # nginx's map keys have no case
    ),
    common=versions,
)
@example(stores={k: "0123456789abcdef-x" for k in KEYWORDS}, common="0123456789abcdef-x")
@example(  # keys nginx cannot hash (over 46 bytes), the contract's longest among them
    stores={
        "k" * 46: "0123456789abcdef-a",
        "k" * 47: "0123456789abcdef-b",
        "K" * 64: "0123456789abcdef-c",
        'a.b~c\\d"e{f}$g^h(' * 3: "0123456789abcdef-d",
    },
    common="0123456789abcdef-x",
)
def test_every_store_key_is_a_key_of_the_release_map(
    stores: dict[str, str], common: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Whatever a store key spells (`default`, `include`, ...) and however long it is,
    `nginx -t` accepts the configuration and the release's map, and the map gives each key,
    in any case, its version, and a key one character longer, at either end, none."""
    folder = tmp_path_factory.mktemp("keys")
    origin = BucketOrigin("http://127.0.0.1:9", "/bucket/pre fix", folder / RELEASE_MAP)
    (folder / RELEASE_MAP).write_text(release_map(stores, common, "build"))
    listen = f"unix:{folder / 'nginx.sock'}"
    conf = nginx.render(folder, listen, "127.0.0.1:9", bucket=origin, cache=folder / "cache")
    (folder / "nginx.conf").write_text(conf)
    main = nginx_main_conf(folder, folder / "nginx.conf", PROBE.format(sock=folder / "probe.sock"))
    assert NGINX
    checked = subprocess.run(
        [NGINX, "-t", "-p", str(folder), "-c", str(main), "-e", str(folder / "error.log")],
        capture_output=True,
        text=True,
    )
    assert checked.returncode == 0, checked.stderr
    with bucket_nginx(folder, PROBE.format(sock=folder / "probe.sock")):
        for key, version in stores.items():
            for spelled in (key, key.upper()):
                got = request(folder / "probe.sock", "/", headers={"X-Store": spelled})
                assert got.body == f"[{version}]".encode(), spelled
            for longer in (key + "x", "x" + key):
                if longer.lower() not in {k.lower() for k in stores}:
                    got = request(folder / "probe.sock", "/", headers={"X-Store": longer})
                    assert got.body == b"[]", repr(longer)
        assert request(folder / "probe.sock", "/", headers={"X-Store": "absent"}).body == b"[]"


@pytest.mark.parametrize(
    ("stores", "common", "named"),
    [
        ({"a": "v$1"}, "c", "store 'a': version 'v$1'"),
        ({"a": "v"}, "c\n", "the common version 'c\\n'"),
    ],
)
def test_a_version_nginx_cannot_write_is_refused_by_name(
    stores: dict[str, str], common: str, named: str
) -> None:
    with pytest.raises(BuildError, match=re.escape(named)):
        release_map(stores, common, "build")


def test_the_live_upstream_down_is_503_with_the_envelope_in_front_of_the_bucket(
    sample_bucket: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Every way to the live upstream (`live_requests`: a store the release lacks, a key nginx
    reads no object for, an object the bucket lacks), with nothing listening there: the error
    envelope's 503, not nginx's HTML 502. (A precondition is asked of nginx itself again, and
    answered from the object: `..._one_etag_a_url`.)"""
    url = sample_bucket
    folder = tmp_path_factory.mktemp("nd")
    no_live = f"unix:{folder / 'nobody.sock'}"
    assert write_nginx(url, folder, f"unix:{folder / 'nginx.sock'}", no_live, cached(folder))
    requests = [(target, headers) for target, headers in live_requests() if not headers]
    paths = [target.partition("?")[0] for target, _ in requests]
    for location in live_locations((folder / "nginx.conf").read_text()):
        assert any(location.fullmatch(path) for path in paths), location.pattern
    with bucket_nginx(folder) as bucket:
        for target, headers in requests:
            got = request(bucket, target, headers=headers)
            assert (got.status, got.content_type, orjson.loads(got.body)) == (
                503,
                JSON,
                envelope(UNAVAILABLE),
            ), target


def test_an_object_deleted_from_the_bucket_is_never_another_builds_bytes(
    s3: S3Server,
    sample_build: Path,
    serve_port: int,
    sample_nights: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """One page's object of the committed release deleted: nginx, which cannot tell it from a
    page never materialised, sends it live naming the release's build; `pipeline serve` of
    another build answers 503 with the envelope, not its own bytes with 200, while the other
    pages still come from the bucket; `pipeline serve` of the release's own build answers it
    with that build's bytes. A client cannot name a build through local nginx."""
    url = s3.bucket("deleted")
    readable(s3, url)
    publish_release((sample_build / "current").resolve(), url)
    release = BucketReader(url).snapshot()
    assert release is not None
    cellar = [t for t in materialised_targets(sample_build) if "/stores/card-cellar/" in t]
    ours = {t: (sample_build / "site" / site_path_of(t)).read_bytes() for t in cellar}
    # A page the other build has other bytes for (its prices were raised), and another.
    gone = next(
        t for t in cellar if (sample_nights / "site" / site_path_of(t)).read_bytes() != ours[t]
    )
    kept = next(t for t in cellar if t != gone)
    theirs = (sample_nights / "site" / site_path_of(gone)).read_bytes()
    key = resolve(release, gone)
    assert key is not None
    obs.delete(open_bucket(url), key)
    folder = tmp_path_factory.mktemp("ng")
    listen = f"unix:{folder / 'nginx.sock'}"
    with preview_server(sample_nights) as port:
        assert write_nginx(url, folder, listen, f"127.0.0.1:{port}", cached(folder))
        with bucket_nginx(folder) as bucket:
            got = request(bucket, gone)
            assert (got.status, got.content_type, orjson.loads(got.body)) == (
                503,
                JSON,
                envelope(UNAVAILABLE),
            )
            assert request(bucket, kept).body == ours[kept]
        # Through local nginx, a client's header names nothing: the other build's own page.
        with running_nginx(
            tmp_path_factory.mktemp("lc"), sample_nights / "site", f"127.0.0.1:{port}"
        ) as local:
            named = {"X-Pipeline-Release": release.build_id, "If-None-Match": '"x"'}
            got = request(local, gone, headers=named)
            assert (got.status, got.body) == (200, theirs)
    assert write_nginx(url, folder, listen, f"127.0.0.1:{serve_port}", cached(folder))
    with bucket_nginx(folder) as bucket:
        got = request(bucket, gone)
        assert (got.status, got.body) == (200, ours[gone])


def site_path_of(target: str) -> str:
    """The site file of a materialised page's canonical URL (`materialised_targets`)."""
    path = site_path(target)
    assert path is not None, target
    return path


# --- what the bucket says, and what decides a URL's ETag ----------------------------------------

# Headers the object store adds to an answer (its ids, checksums, storage, encryption, user
# metadata): local nginx sends none of them, nor does `pipeline serve`.
STORE_HEADER = re.compile(r"x-amz|x-amzn", re.IGNORECASE)


def test_nginx_in_front_of_the_bucket_sends_local_nginxs_headers_and_one_etag_a_url(
    sample_bucket: str,
    sample_build: Path,
    serve_port: int,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """A page, the help page and a bulk file from the bucket carry the headers local nginx
    sends for them, by name, and none of the object store's; a URL's ETag is the one a plain
    GET gets whatever preconditions the request holds (If-Match, If-Unmodified-Since, which
    `pipeline serve` ignores), plain or compressed, and If-None-Match naming it is 304."""
    folder = tmp_path_factory.mktemp("nh")
    listen = f"unix:{folder / 'nginx.sock'}"
    assert write_nginx(sample_bucket, folder, listen, f"127.0.0.1:{serve_port}", cached(folder))
    page = "/v1.39.0/stores/tiny7/inventory/products"
    live = "/v1.39.0/stores/tiny7/inventory/products?limit=2"
    targets = [page, HELP_PATH, bulk_targets(sample_build)[0], live]
    preconditions: list[dict[str, str]] = [
        {"If-Match": "*"},
        {"If-Match": '"other"'},
        {"If-Unmodified-Since": "Sat, 01 Jan 2000 00:00:00 GMT"},
        {"If-Unmodified-Since": "Fri, 01 Jan 2100 00:00:00 GMT"},
    ]
    with (
        running_nginx(
            tmp_path_factory.mktemp("lh"), sample_build / "site", f"127.0.0.1:{serve_port}"
        ) as local,
        bucket_nginx(folder) as bucket,
    ):
        for target in targets:
            ours, theirs = request(local, target), request(bucket, target)
            assert (theirs.status, theirs.body) == (200, ours.body), target
            assert not [h for h in theirs.headers if STORE_HEADER.match(h)], theirs.headers
            assert set(theirs.headers) == set(ours.headers), target
            etag = theirs.headers["etag"]
            for more in preconditions:
                got = request(bucket, target, headers=more)
                assert (got.status, got.headers.get("etag"), got.body) == (
                    200,
                    etag,
                    theirs.body,
                ), (target, more)
                assert set(got.headers) == set(theirs.headers), (target, more)
                zipped = request(bucket, target, headers={**more, "Accept-Encoding": "gzip"})
                if "content-encoding" in zipped.headers:
                    assert zipped.headers["etag"] == f"W/{etag}", (target, more)
                    assert gzip.decompress(zipped.body) == theirs.body
                named = request(bucket, target, headers={**more, "If-None-Match": etag})
                assert (named.status, named.headers.get("etag")) == (304, etag), (target, more)


def test_a_bucket_nginx_cannot_read_or_that_does_not_exist_is_refused_in_one_line(
    s3: S3Server, sample_build: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A bucket that does not exist: `pipeline nginx-bucket` and `pipeline publish` say so in
    one line. A bucket with the release but no policy: `pipeline nginx-bucket` names the object
    nginx would fail to read, the bucket's answer and the policy, and writes nothing; with
    docs/serving.md's policy it writes the configuration, and nginx serves the help page and a
    store's page from the bucket with no live upstream behind it."""
    folder = tmp_path_factory.mktemp("nr")
    listen, no_live = f"unix:{folder / 'nginx.sock'}", f"unix:{folder / 'nobody.sock'}"
    where = ["--dir", str(folder), "--listen", listen, "--upstream", no_live]
    missing = "s3://never-created/site"
    for command, args in (
        ("nginx-bucket", ["--to", missing, *where]),
        ("publish", ["--to", missing, "--output", str(sample_build)]),
    ):
        done = fork_cli(command, *args)
        assert (done.returncode, done.stderr.splitlines()) == (
            1,
            [
                f"{command} failed: s3://never-created: no such bucket (the object store "
                "answers NoSuchBucket); create it, or correct publish.to"
            ],
        ), done.stderr
    url = s3.bucket("private")
    publish_release((sample_build / "current").resolve(), url)
    release = BucketReader(url).snapshot()
    assert release is not None
    help_key = resolve(release, HELP_PATH)
    done = fork_cli("nginx-bucket", "--to", url, *where)
    (line,) = done.stderr.splitlines()
    assert done.returncode == 1, done.stderr
    assert line.startswith(f"nginx-bucket failed: {s3.endpoint}/private/site/{help_key}: "), line
    assert "nginx cannot read it: a GET without credentials answers 403 " in line
    assert (
        "anyone GET private/site/stores/*, private/site/groups/*, private/site/categories/*, "
        "private/site/bulk/* and private/site/common/*" in line
    )
    assert sorted(p.name for p in folder.iterdir()) == []
    readable(s3, url)
    done = fork_cli("nginx-bucket", "--to", url, *where)
    assert done.returncode == 0, done.stderr
    page = "/v1.39.0/stores/tiny7/inventory/products"
    with bucket_nginx(folder) as bucket:
        for target, file in ((HELP_PATH, site_path_of(HELP_PATH)), (page, site_path_of(page))):
            got = request(bucket, target)
            assert (got.status, got.body) == (200, (sample_build / "site" / file).read_bytes())
    assert (folder / "cache").is_dir()  # `serve.nginx_cache` unset: DIR/cache, its own


@pytest.fixture(scope="module")
def bucket_socket(
    sample_bucket: str, serve_port: int, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Path]:
    """nginx in front of the sample's bucket, `serve_port` its live upstream, for the module."""
    folder = tmp_path_factory.mktemp("hb")
    listen = f"unix:{folder / 'nginx.sock'}"
    assert write_nginx(sample_bucket, folder, listen, f"127.0.0.1:{serve_port}", cached(folder))
    with bucket_nginx(folder) as sock:
        yield sock


@pytest.fixture(scope="module")
def raw() -> Iterator[RawClient]:
    kept = RawClient()
    yield kept
    kept.close()


@pytest.fixture(scope="module")
def kinds(sample_build: Path) -> Kinds:
    return Kinds.of(sample_build)


@settings(max_examples=50, deadline=None)
@given(generated=heads())
def test_nginx_in_front_of_the_bucket_reads_generated_heads_as_pipeline_serve(
    raw: RawClient, bucket_socket: Path, serve_port: int, kinds: Kinds, generated: Generated
) -> None:
    """The heads `tests/serve/test_heads.py` sends to local nginx: the same status, body and
    contract's headers from nginx in front of the bucket and from `pipeline serve`, each with
    its own ETag of a URL (the object's MD5 in front of the bucket) where ETAG stands."""
    got = []
    for address in (bucket_socket, serve_port):
        etag, head = kinds.head(raw, address, generated)
        status, body, headers = compared(raw.send(address, head))
        if "etag" in headers:
            headers["etag"] = headers["etag"].replace(etag, "ETAG")
        got.append((status, body, headers))
    assert got[0] == got[1], head
