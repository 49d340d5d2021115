"""The build report: machine-readable JSON, and an HTML page rendered by a real headless
browser (Debian's chromium, installed by `make system-deps`), screenshot taken."""

from __future__ import annotations

import shutil
import struct
import subprocess
from pathlib import Path

import orjson

from pipeline.export import report

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


def _screenshot(page: Path, shot: Path, profile: Path, height: int) -> bytes:
    """The PNG headless chromium takes of `page` in a window 1100 pixels wide."""
    assert CHROMIUM
    subprocess.run(
        [
            CHROMIUM,
            *FLAGS,
            f"--user-data-dir={profile}",
            f"--window-size=1100,{height}",
            f"--screenshot={shot}",
            page.as_uri(),
        ],
        capture_output=True,
        timeout=120,
        check=True,
    )
    return shot.read_bytes()


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
    # Five charts and the four of the history (one build); the sample has no rejects, so that
    # chart says so instead of drawing.
    assert dom.count("<svg") == 8 and "Nothing to show." in dom
    assert "The last 1 builds (meta.build_run)" in dom
    assert "Listings per store" in dom and "3d05ef67" in dom
    shot = tmp_path / "report.png"
    data = _screenshot(page, shot, tmp_path / "profile2", 1600)
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    assert (width, height) == (1100, 1600) and len(data) > 30_000  # a page with content, not blank


# Run by the test only, in a copy of the page (the report itself has no script): how many of
# each history chart's columns the browser laid out with a height, into the DOM it dumps.
MEASURE = """<script>
document.body.dataset.columns = [...document.querySelectorAll("#history svg")]
  .map(svg => [...svg.querySelectorAll("rect")].filter(r => r.getBBox().height > 0).length)
  .join(",");
</script></body>"""


def test_the_history_charts_render_thirty_builds(sample_build: Path, tmp_path: Path) -> None:
    """The report's history (issue 17, item 5) over 30 builds, one of them from before
    `files_changed` was recorded: drawn by a real browser, and screenshot."""
    assert CHROMIUM, "chromium is not installed: run `make system-deps` (or `make test`)"
    summary = orjson.loads((sample_build / "build_report.json").read_bytes())
    summary["history"] = [
        {
            "build_id": f"20261101T0{n:02d}000Z-{n:06x}",
            "started_at": f"2026-11-{n + 1:02d} 02:00",
            "listings": 1_000_000 + 5_000 * n,
            "files_changed": None if n == 0 else (n * 7_919) % 60_000,
            "rejected_rows": n % 4 * 10,
            "seconds": 14.0 + n % 5,
        }
        for n in range(30)
    ]
    page = tmp_path / "report.html"
    page.write_text(report.render_html(summary).replace("</body>", MEASURE))
    dom = subprocess.run(
        [CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'p1'}", "--dump-dom", page.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    assert "The last 30 builds (meta.build_run)" in dom
    # A column a build; the build without files_changed has none, the builds without rejects
    # a hairline.
    assert 'data-columns="30,29,30,30"' in dom
    assert "not recorded" in dom
    shot = tmp_path / "history.png"
    page.write_text(report.render_html(summary))
    data = _screenshot(page, shot, tmp_path / "p2", 2400)
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", data[16:24]) == (1100, 2400) and len(data) > 40_000
