"""Never lose a good build: a build that fails says why in one line and publishes nothing, a
killed build leaves the published build as it was, and a second build on the same output
waits its turn."""

from __future__ import annotations

import contextlib
import os
import random
import re
import signal
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from pipeline.build import build
from pipeline.errors import BuildError
from pipeline.settings import load_settings
from tests.support.inputs import SAMPLE, write_inputs, write_table
from tests.support.proxy import fork_cli, start_build
from tests.support.runs import good_build, published_state


@pytest.fixture(scope="module")
def good_output(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One published build, shared by the tests whose builds fail and so must leave it as is."""
    return good_build(tmp_path_factory.mktemp("good"))


def _missing_file(d: Path) -> None:
    (d / "catalog" / "skus.csv").unlink()


def _missing_column(d: Path) -> None:
    write_table(d, "products", [{"productId": 100, "categoryId": 1, "name": "x"}])


def _unreadable(d: Path) -> None:
    (d / "catalog" / "skus.csv").unlink()
    (d / "catalog" / "skus.parquet").write_bytes(b"PAR1 truncated")


def _empty_catalog(d: Path) -> None:
    write_table(d, "products", [])


def _too_many_rejects(d: Path) -> None:
    write_table(
        d,
        "listings",
        [
            {"storeKey": "s1", "skuId": 1000, "price": "1.00", "quantity": 1},
            {"storeKey": "s1", "skuId": 1001, "price": "oops", "quantity": 1},
        ],
    )


@pytest.mark.parametrize(
    ("breaks", "message"),
    [
        (_missing_file, r"catalog/skus: missing required input"),
        (_missing_column, r"catalog/products.csv: missing required column groupId"),
        (_unreadable, r"catalog/skus.parquet: cannot read Parquet"),
        (_empty_catalog, r"catalog/products: no usable product rows \(empty catalog\)"),
        (
            _too_many_rejects,
            r"stores/listings: 1 of 2 rows rejected \(50.0%, above build.max_reject_share 5.0%\)",
        ),
    ],
)
def test_a_failed_build_says_why_in_one_line_and_publishes_nothing(
    good_output: Path, tmp_path: Path, breaks: Any, message: str
) -> None:
    before = published_state(good_output)
    bad = write_inputs(tmp_path / "bad")
    breaks(bad)
    result = fork_cli("build", "--input", str(bad), "--output", str(good_output))
    assert result.returncode == 1
    *logs, last = result.stderr.strip().splitlines()
    assert "Traceback" not in result.stderr, result.stderr
    assert all(orjson.loads(line)["event"] for line in logs)  # structured log lines, then
    assert re.search(message, last), last  # one line that says what is wrong
    assert published_state(good_output) == before


@pytest.mark.slow
def test_a_killed_build_leaves_the_published_build_and_the_next_one_succeeds(
    tmp_path: Path,
) -> None:
    output = tmp_path / "out"
    started = time.monotonic()  # the first build's time: the span the kills are drawn from
    build(load_settings(None, input=SAMPLE, output=output))
    duration = time.monotonic() - started
    good = published_state(output)
    err = tmp_path / "stderr"
    args = ["build", "--input", str(SAMPLE), "--output"]
    rng = random.Random(20261121)
    for _ in range(14):  # at random moments of the build, forked to start at once
        process = start_build([*args, str(output)], err)
        time.sleep(rng.uniform(0.05, duration * 1.1))
        assert process.pid is not None
        with contextlib.suppress(ProcessLookupError):  # it ended before: the build got through
            os.kill(process.pid, signal.SIGKILL)
        process.join(60)
        state = published_state(output)
        if state["current"] != good["current"]:  # the build got through before the kill
            assert {k: v for k, v in state.items() if k not in ("current", "warehouse")} == {
                k: v for k, v in good.items() if k not in ("current", "warehouse")
            }
            good = state
        assert state == good
    result = fork_cli("build", "--input", str(SAMPLE), "--output", str(output))
    assert result.returncode == 0, result.stderr
    assert not list((output / ".work").glob("*"))
    published = [r for r in (output / "releases").iterdir()]
    assert all((r / ".published").exists() for r in published) and len(published) <= 3


def test_a_second_build_on_the_same_output_waits_its_turn(good_output: Path) -> None:
    import fcntl

    with (good_output / ".build.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        with pytest.raises(BuildError, match="another build is running"):
            build(load_settings(None, input=SAMPLE, output=good_output))
