"""A reader of the output while builds publish never sees an error, a partial file or a mix of
two releases."""

from __future__ import annotations

import os
import queue
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.support.inputs import SAMPLE
from tests.support.proxy import fork_cli

READER = r"""
import hashlib, json, os, sys
import duckdb
output, stop = sys.argv[1], sys.argv[2]
con = duckdb.connect(os.path.join(output, "warehouse.duckdb"), read_only=True)
first = con.execute("SELECT count(*) FROM marts.listing").fetchall()
reads, seen = 0, []
while not os.path.exists(stop):
    assert con.execute("SELECT count(*) FROM marts.listing").fetchall() == first
    release = os.path.realpath(os.path.join(output, "current"))
    manifest = json.load(open(os.path.join(release, "manifest.json")))
    for entry in manifest["files"][::40]:
        body = open(os.path.join(release, "site", entry["path"]), "rb").read()
        assert hashlib.sha256(body).hexdigest() == entry["sha256"], entry["path"]
        if entry["path"].endswith(".json"):
            json.loads(body)
    page = open(os.path.join(output, "site/v1.39.0/stores/tiny7/inventory/products/index.json"), "rb").read()
    json.loads(page)
    reads += 1
    if not seen or seen[-1] != os.path.basename(release):
        seen.append(os.path.basename(release))
        print("read", seen[-1], flush=True)  # a whole release read, checked against its manifest
print("done", reads, flush=True)
"""


@pytest.mark.slow
def test_readers_never_see_an_error_a_partial_file_or_a_mix(
    tmp_path: Path, sample_build: Path
) -> None:
    """A reader checks releases in a loop while four builds publish; each build waits until the
    reader has read the previous one whole, and the reader stops when told (no time window)."""
    output = tmp_path / "out"
    shutil.copytree(sample_build, output, symlinks=True)  # the sample's build, made once a run
    other = tmp_path / "other"
    shutil.copytree(SAMPLE, other, ignore=shutil.ignore_patterns("out", "*.py"))
    products = other / "catalog" / "products.csv"  # a different build: renamed products
    products.write_text(
        products.read_text(encoding="utf-8").replace("Sol Ring", "Sol Ring (Alt)"), encoding="utf-8"
    )
    stop, errors = tmp_path / "stop", tmp_path / "reader.err"
    with errors.open("w") as stderr:
        reader = subprocess.Popen(
            [sys.executable, "-c", READER, str(output), str(stop)],
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
        )
    lines: queue.Queue[str] = queue.Queue()

    def forward() -> None:
        assert reader.stdout is not None
        for line in reader.stdout:
            lines.put(line)
        lines.put("")  # the end of its output: the reader exited

    threading.Thread(target=forward, daemon=True).start()

    def next_line() -> str:
        try:
            line = lines.get(timeout=300)  # a safety net only: a read takes well under a second
        except queue.Empty:
            reader.kill()
            raise AssertionError("the reader reported nothing for 300 s") from None
        assert line, f"the reader failed ({reader.wait()}): {errors.read_text()}"
        return line.strip()

    def read_by_the_reader(release: str) -> None:
        while next_line() != f"read {release}":
            pass

    published = [Path(os.readlink(output / "current")).name]
    try:
        read_by_the_reader(published[-1])
        for n in range(4):
            result = fork_cli(
                "build", "--input", str(other if n % 2 == 0 else SAMPLE), "--output", str(output)
            )
            assert result.returncode == 0, result.stderr
            published.append(Path(os.readlink(output / "current")).name)
            read_by_the_reader(published[-1])
        stop.touch()
        done, reads = next_line().split()
        assert (done, int(reads) >= len(published)) == ("done", True)
        assert reader.wait(timeout=300) == 0, errors.read_text()
    finally:
        if reader.poll() is None:
            reader.kill()
            reader.wait()
    assert len(set(published)) == 5, published  # every build published a release of its own
