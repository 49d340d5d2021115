"""The public clients' tests: a client installed into a folder of its own, and a
script of it run against the servers."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

# uv, which `make setup` installs beside the project, in a tenth of pip's time.
UV = Path(sys.executable).parent / "uv"


def client_installed(tmp_path_factory: pytest.TempPathFactory, packages: tuple[str, ...]) -> Path:
    """A throwaway folder with `packages` installed (by uv, for this interpreter) for a public
    client's own calls: from uv's cache where it holds them all (asking the index costs uv
    about two seconds of CPU for a package built from its source), else from the package index;
    without the index (an offline machine), the test is skipped with the reason."""
    target = tmp_path_factory.mktemp(packages[0].partition("=")[0])
    install = [str(UV), "pip", "install", "--quiet", "--python", sys.executable]
    for network in (["--offline"], []):
        try:
            done = subprocess.run(
                [*install, *network, "--target", str(target), *packages],
                capture_output=True,
                text=True,
                timeout=180,
            )
        except subprocess.TimeoutExpired:
            pytest.skip("pip install took over 180 s (is the package index reachable?)")
        if done.returncode == 0:
            return target
    pytest.skip(f"pip install {packages[0]} failed (offline?): {done.stderr.strip()[-300:]}")


def run_client(client_path: Path, script: str, *args: str, timeout: float = 120) -> str:
    """A public client's script, run with its installed folder (`client_installed`) on the path:
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
