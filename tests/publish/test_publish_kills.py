"""A property of publishing: whatever moment of the publish step a SIGKILL lands on, and whatever
builds of other inputs follow, the published release is exactly the truth of one input (the
manifest a clean build of it writes), with every file its manifest names, and a cut export never
publishes.

The kill is placed by counting the filesystem events (Python audit events: open, rename, unlink,
symlink, rmtree, ...) of the publish step in a child process, and sent by the child to itself at
the n-th: a real SIGKILL at a chosen count of events, the same on every run (which old folder a
deletion reaches first may differ with the folders' random names)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from pipeline.build import build
from pipeline.export.records.manifest import Manifest
from pipeline.paths import CURRENT, MANIFEST, POOL, PUBLISHED, RELEASES, SITE
from pipeline.publish.release import store_folders
from pipeline.settings import load_settings
from tests.support.inputs import ROOT, write_inputs
from tests.support.runs import site_files

KILLER = r"""
import os, signal, sys

KILL_AT = int(sys.argv[1])
EVENTS = {"open", "os.rename", "os.remove", "os.rmdir", "os.symlink", "os.link", "os.mkdir",
          "shutil.rmtree", "os.utime"}
count, armed = 0, False

def hook(event, args):
    global count
    if armed and event in EVENTS:
        count += 1
        if count == KILL_AT:
            os.kill(os.getpid(), signal.SIGKILL)

sys.addaudithook(hook)
import pipeline.conductor

publish = pipeline.conductor.publish

def publish_then_disarm(*args, **kwargs):
    global armed
    armed = True
    problems = publish(*args, **kwargs)
    armed = False
    return problems

pipeline.conductor.publish = publish_then_disarm
from pipeline.cli import main

sys.argv = ["pipeline", *sys.argv[2:]]
main()
"""
# About 107 such events with one release kept and one to delete (the swap, the mark, the old
# release's and its pages' deletion), 26 for a first publish: a kill drawn past the step's last
# event lands after it (the build exits 0), one drawn at or below SURE always lands in it.
EVENTS = 110
SURE = 20
ENV = {"PIPELINE_BUILD__RELEASES_KEPT": "1", "PIPELINE_BUILD__VOLUME__MIN_COUNT": "10"}

_STORES = [f"store{i}" for i in range(6)]
_LISTINGS = [
    {"storeKey": store, "skuId": sku, "price": "1.00", "quantity": 1}
    for store in _STORES
    for sku in (1000, 1001, 1010)
]
INPUTS = {
    "a": _LISTINGS,
    "b": [{**row, "price": "2.00"} for row in _LISTINGS],  # other pages, the same counts
    "cut": _LISTINGS[:9],  # an export cut in half: the volume guard stops it
}


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, bytes]]:
    """name -> (input directory, the manifest a clean build of it writes)."""
    base = tmp_path_factory.mktemp("inputs")
    made = {}
    for name, listings in INPUTS.items():
        directory = write_inputs(base / name, listings=listings)
        release = build(load_settings(None, input=directory, output=base / f"{name}-out")).release
        made[name] = (directory, (release / MANIFEST).read_bytes())
    return made


def _check_published(output: Path) -> bytes:
    """The published manifest, after checking that the site holds each file it names, with its
    SHA-256, and no other."""
    release = (output / CURRENT).resolve()
    files = site_files(release / SITE)
    manifest = Manifest.load(release).frame
    for path, sha256 in zip(manifest["path"], manifest["sha256"], strict=True):
        assert hashlib.sha256(files[path].read_bytes()).digest() == sha256, path
    assert len(files) == len(manifest)
    return (release / MANIFEST).read_bytes()


def _build(input_dir: Path, output: Path, *python: str) -> subprocess.CompletedProcess[str]:
    """`pipeline build` in a child Python started with the arguments `python`."""
    return subprocess.run(
        [sys.executable, *python, "build", "--input", str(input_dir), "--output", str(output)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, **ENV},
        timeout=300,
    )


@pytest.mark.slow
@settings(
    max_examples=4,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    killed=st.lists(
        st.tuples(st.sampled_from(sorted(INPUTS)), st.integers(1, EVENTS)), min_size=1, max_size=2
    ),
    last=st.sampled_from(["a", "b"]),
)
@example(killed=[("b", 60)], last="a")  # in the deletion of a's release and pages, a again
@example(killed=[("b", 5), ("cut", 1)], last="b")  # after the swap, before the mark
def test_a_kill_anywhere_in_the_publish_step_never_publishes_less_than_the_truth(
    inputs: dict[str, tuple[Path, bytes]], killed: list[tuple[str, int]], last: str
) -> None:
    output = Path(tempfile.mkdtemp(prefix="kills-", dir=inputs["a"][0].parent))
    build(load_settings(None, input=inputs["a"][0], output=output, build={"releases_kept": 1}))
    live = "a"
    for name, event in killed:
        result = _build(inputs[name][0], output, "-c", KILLER, str(event))
        published = _check_published(output)
        if name == "cut":  # stopped by the volume guard before it publishes anything
            assert result.returncode == 1, result.stderr
            assert "stores/listings: 9 accepted rows, against 18" in result.stderr
        else:
            assert result.returncode in ((-9,) if event <= SURE else (0, -9)), result.stderr
            assert published in (inputs[live][1], inputs[name][1])
            live = name if published == inputs[name][1] else live
    result = _build(inputs[last][0], output, "-m", "pipeline")
    assert result.returncode == 0, result.stderr
    assert _check_published(output) == inputs[last][1]
    current = (output / CURRENT).resolve()
    assert [r.name for r in (output / RELEASES).iterdir()] == [current.name]
    assert (current / PUBLISHED).read_text().strip()
    assert sorted(p.name for p in (output / POOL).iterdir()) == sorted(
        store_folders(current / SITE).values()
    )
