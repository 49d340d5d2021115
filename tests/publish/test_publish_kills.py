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
import shutil
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
from tests.support.inputs import write_inputs
from tests.support.proxy import run_build
from tests.support.runs import site_files

# 168 such events with one release kept and one to delete (the swap, the mark, the old
# release's and its pages' deletion), 26 for a first publish: a kill drawn past the step's last
# event lands after it (the build exits 0), one drawn at or below SURE always lands in it.
EVENTS = 170
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
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, bytes, Path]]:
    """name -> (input directory, the manifest a clean build of it writes, that build's output
    with one release kept: read only)."""
    base = tmp_path_factory.mktemp("inputs")
    made = {}
    for name, listings in INPUTS.items():
        directory = write_inputs(base / name, listings=listings)
        settings = load_settings(
            None, input=directory, output=base / f"{name}-out", build={"releases_kept": 1}
        )
        release = build(settings).release
        made[name] = (directory, (release / MANIFEST).read_bytes(), settings.output)
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


def _build(input_dir: Path, output: Path, kill_at: int = 0) -> tuple[int, str]:
    """`pipeline build` in a child process, killed at the `kill_at`-th filesystem event of its
    publish step (0: never): its exit code and standard error."""
    return run_build(["build", "--input", str(input_dir), "--output", str(output)], ENV, kill_at)


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
@example(killed=[("b", 4), ("cut", 1)], last="b")  # after the swap, before the mark
def test_a_kill_anywhere_in_the_publish_step_never_publishes_less_than_the_truth(
    inputs: dict[str, tuple[Path, bytes, Path]], killed: list[tuple[str, int]], last: str
) -> None:
    output = Path(tempfile.mkdtemp(prefix="kills-", dir=inputs["a"][0].parent)) / "out"
    shutil.copytree(inputs["a"][2], output, symlinks=True)  # a's build, made once
    live = "a"
    for name, event in killed:
        code, err = _build(inputs[name][0], output, event)
        published = _check_published(output)
        if name == "cut":  # stopped by the volume guard before it publishes anything
            assert code == 1, err
            assert "stores/listings: 9 accepted rows, against 18" in err
        else:
            assert code in ((-9,) if event <= SURE else (0, -9)), err
            assert published in (inputs[live][1], inputs[name][1])
            live = name if published == inputs[name][1] else live
    code, err = _build(inputs[last][0], output)
    assert code == 0, err
    assert _check_published(output) == inputs[last][1]
    current = (output / CURRENT).resolve()
    assert [r.name for r in (output / RELEASES).iterdir()] == [current.name]
    assert (current / PUBLISHED).read_text().strip()
    assert sorted(p.name for p in (output / POOL).iterdir()) == sorted(
        store_folders(current / SITE).values()
    )
