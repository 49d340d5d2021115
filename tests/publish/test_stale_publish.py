"""A stale publish, paused by the proxy (`tests/support/proxy.py`) while another commits:
an older build never replaces a newer one's release (unless asked, `--allow-older`), whatever
request the pause lands on; and a publish whose release was collected under it says that the
pointer moved, not that the bucket is damaged."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.publish.objectstore import publish_release
from tests.support.bucket import Build, check_bucket, pointer
from tests.support.proxy import Proxy, Request, Rule, finish, paused, start_publish
from tests.support.s3 import S3Server

OPTIONS = {"lease_seconds": 1, "grace": 0}


@pytest.fixture(scope="module")
def older_newer(three_releases: dict[str, Path]) -> tuple[Path, Path]:
    """Two releases, the second built after the first, one store's prices raised: (older,
    newer)."""
    return three_releases["a"], three_releases["b"]


def _at(n: int) -> Rule:
    return lambda r: "pause" if r[0] == n else None


@pytest.mark.slow
def test_an_older_build_paused_at_any_request_never_replaces_a_newer_one(
    s3: S3Server, proxy: Proxy, older_newer: tuple[Path, Path]
) -> None:
    """The older build's publish paused before each of its requests in turn (into an empty
    bucket) while the newer build publishes: once it goes on, the pointer names the newer
    build, and a refusal changed nothing."""
    older, newer = older_newer
    builds = {r.name: Build.of(r) for r in older_newer}
    said: set[str] = set()
    n = 1
    while True:
        url = s3.bucket(f"older-{n}")
        stale = start_publish(proxy, older, url, _at(n), **OPTIONS)
        if not paused(stale):  # past its last request: it ran to the end
            assert finish(stale)[0] == 0
            break
        code, err = finish(start_publish(proxy, newer, url, lambda r: None, take_over=True))
        assert code == 0, err
        before = pointer(url)
        proxy.victim = stale
        stale.resume.set()
        code, err = finish(stale)
        assert check_bucket(url, builds) == newer.name, (n, stale.seen[-1], code, err)
        if code == 1:
            assert pointer(url) == before, n
            said.add(err.partition(": ")[2].partition(" ")[0])
        n += 1
    assert n > 20
    # Refused by the build ids once it read the newer pointer (the lease and the pointer's
    # read included), by the compare-and-swap after it read the empty bucket.
    assert said == {"the", "another"}, said

    # Asked, it replaces it: a rollback.
    url = s3.bucket("rollback")
    publish_release(newer, url)
    refused = f"{url}: the bucket's release is of build {newer.name}, newer than this build "
    with pytest.raises(Exception, match=refused.replace(".", r"\.").replace("(", r"\(")):
        publish_release(older, url)
    assert check_bucket(url, builds) == newer.name
    publish_release(older, url, allow_older=True)
    assert check_bucket(url, builds) == older.name
    publish_release(older, url)  # the same build again: not older than itself
    assert check_bucket(url, builds) == older.name


def test_a_publish_whose_release_was_collected_under_it_says_the_pointer_moved(
    s3: S3Server, proxy: Proxy, older_newer: tuple[Path, Path]
) -> None:
    """Paused between reading the pointer and reading the release it names, while another
    publish commits and collects that release (one kept): the bucket is whole, and the
    publish says the pointer moved and to publish again, which then succeeds."""
    older, newer = older_newer
    builds = {r.name: Build.of(r) for r in older_newer}
    url = s3.bucket("moved")
    publish_release(older, url)
    gone = pointer(url)["release"]

    def at_document(r: Request) -> str | None:
        return "pause" if r[1] == "GET" and r[2].split("?")[0].endswith("/release.json") else None

    stale = start_publish(proxy, newer, url, at_document, **OPTIONS)
    assert paused(stale), stale.seen
    code, err = finish(
        start_publish(proxy, older, url, lambda r: None, take_over=True, keep=1, grace=0)
    )
    assert code == 0, err
    assert pointer(url)["release"] != gone
    proxy.victim = stale
    stale.resume.set()
    code, err = finish(stale)
    assert code == 1
    assert err == (
        f"{url}: current.json moved while this publish read the release it named ({gone}: "
        "another publish committed since, and collected it); the bucket is whole and nothing "
        "was published: publish again"
    )
    assert check_bucket(url, builds) == older.name
    code, err = finish(start_publish(proxy, newer, url, lambda r: None, take_over=True))
    assert code == 0, err
    assert check_bucket(url, builds) == newer.name
