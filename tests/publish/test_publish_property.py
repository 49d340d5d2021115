"""Publishes of three releases and collections (`--collect-only`) against the test S3 server,
each killed (SIGKILL) or paused at a request placed by count, while others publish or collect:
after every step the pointer names one whole release with its own bytes, read through the
pointer by URL; after the last, a collection past the grace period leaves only the kept
releases' versions.

Every publish or collection runs in a child process with a lease of 1 s, a grace period of 0
(a collection deletes whatever no kept release names, a live publish's new versions included:
only the fence protects them), and one request in flight, through a proxy that counts its
requests and kills or pauses it at one of them."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.publish.collect import collect
from tests.support.bucket import Build, check_bucket, only_kept_left
from tests.support.proxy import Proxy, Request, Rule, Victim, finish, paused, start_publish
from tests.support.s3 import S3Server

KEEP = 2
# Any release over any other: which build is newer is another test's (test_stale_publish.py).
OPTIONS = {"lease_seconds": 1, "grace": 0, "keep": KEEP, "allow_older": True}
COLLECT = "collect"  # in place of a release's name: a collection of the bucket


@pytest.mark.slow
def test_kills_and_pauses_at_any_request_never_publish_a_mix(
    s3: S3Server, proxy: Proxy, three_releases: dict[str, Path]
) -> None:
    builds = {r.name: Build.of(r) for r in three_releases.values()}
    assert len({tuple(b.files.items()) for b in builds.values()}) == 3  # three different sites
    url = s3.bucket("property")
    names = list(three_releases)
    outcomes: dict[str, int] = {}

    def start(name: str, rule: Rule | None = None, take_over: bool = False) -> Victim:
        """A publish of release `name`, or with "collect" a collection (`--collect-only`)."""
        release = three_releases[names[0] if name == COLLECT else name]
        options = {**OPTIONS, "collect_only": True} if name == COLLECT else OPTIONS
        return start_publish(
            proxy, release, url, rule or (lambda r: None), take_over=take_over, **options
        )

    def publish(name: str, rule: Rule | None = None, take_over: bool = False) -> tuple[int, str]:
        victim = start(name, rule, take_over)
        code, err = finish(victim)
        outcomes[f"{victim.fired}:{code}"] = outcomes.get(f"{victim.fired}:{code}", 0) + 1
        return code, err

    def checked() -> str | None:
        return check_bucket(url, builds)

    assert publish("a")[0] == 0
    assert checked() == three_releases["a"].name

    # A SIGKILL at request n, for every n of a publish, before the request reaches the server
    # and after it did (the pointer committed, the client killed before it hears): each of the
    # three releases in turn, so that every kill finds versions to add and to collect.
    n, quiet = 1, 0
    while quiet < 2:
        for mode in ("kill", "kill-after"):
            name = names[(n + (mode == "kill")) % 3]

            def at_n(r: Request, n: int = n, mode: str = mode) -> str | None:
                return mode if r[0] == n else None

            code, _ = publish(name, at_n, take_over=True)
            checked()
            quiet = quiet + 1 if code == 0 else 0  # past its last request: it finished
        n += 1
    assert n > 20  # a publish of a changed release makes more than 20 requests

    # A publish paused at a request of each kind (its first, a page, the commit, its
    # collection's listing and a deletion after it) while another publishes a third release,
    # killed or not; and a collection (`--collect-only`) beside a publish, either one paused.
    def at(method: str, needle: str, action: str = "pause", nth: int = 1) -> Rule:
        """`action` at the `nth` request of `method` whose path holds `needle`."""
        matched: list[Request] = []

        def rule(r: Request) -> str | None:
            if r[1] == method and needle in r[2]:
                matched.append(r)
                return action if len(matched) == nth else None
            return None

        return rule

    # (the paused one, its pause, the other, the other's rule, what the paused one must say)
    pauses: list[tuple[str, Rule, str, Rule | None, str | None]] = [
        ("b", at("PUT", "lease.json"), "c", None, None),
        ("b", at("PUT", "/releases/"), "c", None, None),
        ("c", at("GET", "list-type=2"), "a", None, None),
        ("a", at("PUT", "current.json"), "b", None, None),
        ("b", at("POST", "delete"), "c", None, None),
        ("c", at("PUT", "/releases/"), "a", at("PUT", "current.json", "kill-after"), None),
        ("a", at("POST", "delete"), "b", at("POST", "delete", "kill"), None),
        # A collection while a publish uploads: it deletes that publish's first versions
        # (named by no release, and past a grace of 0), and its fence fails that commit.
        ("c", at("PUT", "/stores/", nth=3), COLLECT, None, "since this one read it"),
        # A collection paused at its fence while a publish commits: it deletes nothing.
        (COLLECT, at("PUT", "current.json"), "c", None, "nothing was deleted"),
    ]
    for stale, pause, other, other_rule, refused in pauses:
        # Taking the lease over: a publish killed in the scenario before may have left one
        # that has not expired yet (1 s), and the lease is advisory (no guarantee rests on it),
        # so whether it had expired must not decide whether this one runs.
        stalled = start(stale, pause, take_over=True)
        assert paused(stalled), stalled.seen
        checked()  # a reader meanwhile
        code, err = publish(other, other_rule)
        if code == 1 and "another publish is running" in err:  # the paused one's lease
            publish(other, other_rule, take_over=True)
        checked()
        proxy.victim = stalled  # the paused one goes on, stale
        stalled.resume.set()
        code, err = finish(stalled)
        outcomes[f"pause:{code}"] = outcomes.get(f"pause:{code}", 0) + 1
        assert refused is None or (code == 1 and refused in err), (stale, other, code, err)
        checked()

    # A collection killed at every request n, before the request reaches the server and
    # after it did, past the grace period: the leftovers of the publishes above go, a part at
    # a time, never what the pointer's release names.
    n, quiet = 1, 0
    while quiet < 2:
        for mode in ("kill", "kill-after"):
            code, _ = publish(COLLECT, lambda r, n=n, mode=mode: mode if r[0] == n else None)
            checked()
            quiet = quiet + 1 if code == 0 else 0
        n += 1

    # Repeated publishes of the three releases, then a collection past the grace period.
    for name in names * 2:
        code, err = publish(name, None, take_over=True)
        assert code == 0, err
        assert checked() == three_releases[name].name
    collect(url, keep=KEEP, grace=0)
    assert checked() == three_releases[names[-1]].name
    only_kept_left(url, KEEP)
    # Every outcome happened: publishes killed, stale ones that committed or were refused.
    assert outcomes.get("kill:-9") and outcomes.get("kill-after:-9"), outcomes
    assert outcomes.get("pause:0") and outcomes.get("pause:1"), outcomes
