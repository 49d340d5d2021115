"""The build report: machine-readable JSON, and an HTML page rendered by a real headless
browser (Debian's chromium, installed by `make system-deps`), screenshot taken."""

from __future__ import annotations

import shutil
import struct
import subprocess
from pathlib import Path

import orjson

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def test_the_json_report_has_the_figures(sample_build: Path) -> None:
    report = orjson.loads((sample_build / "build_report.json").read_bytes())
    assert report["store_sizes"][0] == {"store": "3d05ef67", "listings": 3596}
    assert {c["category"] for c in report["price_by_category"]} == {
        "Magic",
        "Pokemon",
        "YuGiOh",
        "Flesh & Blood TCG",
        "Lorcana TCG",
    }
    assert set(report["stages_seconds"]) == {"ingest", "transform", "export"}


def test_the_html_report_renders_in_a_headless_browser(sample_build: Path, tmp_path: Path) -> None:
    assert CHROMIUM, "chromium is not installed: run `make system-deps` (or `make test`)"
    page = (sample_build / "build_report.html").resolve()
    text = page.read_text()
    assert "http://" not in text.replace("http://www.w3.org", "") and "https://" not in text, (
        "the page must be viewable without a network"
    )
    dom = subprocess.run(
        [CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", page.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    # Five charts; the sample has no rejects, so that one says so instead of drawing.
    assert dom.count("<svg") == 4 and "Nothing to show." in dom
    assert "Listings per store" in dom and "3d05ef67" in dom
    shot = tmp_path / "report.png"
    subprocess.run(
        [
            CHROMIUM,
            *FLAGS,
            f"--user-data-dir={tmp_path / 'profile2'}",
            "--window-size=1100,1600",
            f"--screenshot={shot}",
            page.as_uri(),
        ],
        capture_output=True,
        timeout=120,
        check=True,
    )
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    assert (width, height) == (1100, 1600) and len(data) > 30_000  # a page with content, not blank
