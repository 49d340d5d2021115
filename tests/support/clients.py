"""The public clients' tests: a client installed by pip into a folder of its own, and a
script of it run against the servers."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

PIP = ("-m", "pip", "install", "-q", "--disable-pip-version-check")


def pip_installed(tmp_path_factory: pytest.TempPathFactory, packages: tuple[str, ...]) -> Path:
    """A throwaway folder with `packages` installed by pip (for a public client's own calls);
    without the package index (an offline machine), the test is skipped with the reason."""
    target = tmp_path_factory.mktemp(packages[0].partition("=")[0])
    try:
        done = subprocess.run(
            [sys.executable, *PIP, "--target", str(target), *packages],
            capture_output=True,
            text=True,
            timeout=180,
        )
    except subprocess.TimeoutExpired:
        pytest.skip("pip install took over 180 s (is the package index reachable?)")
    if done.returncode != 0:
        pytest.skip(f"pip install {packages[0]} failed (offline?): {done.stderr.strip()[-300:]}")
    return target


def run_client(client_path: Path, script: str, *args: str, timeout: float = 120) -> str:
    """A public client's script, run with its installed folder (`pip_installed`) on the path:
    its standard output, once it exited 0."""
    done = subprocess.run(
        [sys.executable, "-c", script, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "PYTHONPATH": str(client_path)},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout
