"""The build report: machine-readable JSON, and an HTML page rendered by a real headless
browser (Debian's chromium, installed by `make system-deps`), screenshot taken."""

from __future__ import annotations

import struct
import subprocess
from pathlib import Path

import orjson
import pytest

from pipeline.export.records import report_html
from pipeline.export.records.report import BuildReport, BuildRun, DistributedFigures, SiteCounts
from pipeline.export.records.state import previous_volumes, seal
from tests.support.browser import CHROMIUM, CHROMIUM_FLAGS


def _screenshot(page: Path, shot: Path, profile: Path, height: int) -> bytes:
    """The PNG headless chromium takes of `page` in a window 1100 pixels wide."""
    assert CHROMIUM
    subprocess.run(
        [
            CHROMIUM,
            *CHROMIUM_FLAGS,
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
        [
            CHROMIUM,
            *CHROMIUM_FLAGS,
            f"--user-data-dir={tmp_path / 'profile'}",
            "--dump-dom",
            page.as_uri(),
        ],
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
// Per chart, as laid out: pairs of texts whose boxes overlap, texts not wholly inside the
// chart, and columns with a text of their own just above them (their value).
const boxes = (svg, what) => [...svg.querySelectorAll(what)].map(e => e.getBBox());
const meet = (a, b) => a.x < b.x + b.width && b.x < a.x + a.width
  && a.y < b.y + b.height && b.y < a.y + a.height;
document.body.dataset.layout = [...document.querySelectorAll("#history svg")].map(svg => {
  const texts = boxes(svg, "text"), width = svg.width.baseVal.value;
  let overlaps = 0;
  texts.forEach((a, i) => texts.slice(i + 1).forEach(b => { overlaps += meet(a, b); }));
  const outside = texts.filter(t => t.x < 0 || t.x + t.width > width || t.y < 0).length;
  const labelled = boxes(svg, "rect").filter(r => r.height > 0).filter(r => texts.some(t =>
    t.x >= r.x - 6 && t.x + t.width <= r.x + r.width + 6 && t.y + t.height <= r.y + 1
    && t.y + t.height >= r.y - 16)).length;
  return `${overlaps}/${outside}/${labelled}`;
}).join(",");
</script></body>"""


def _laid_out(summary: BuildReport, folder: Path) -> str:
    """The history section of `summary`'s page as headless chromium laid it out (`MEASURE`)."""
    page = folder / "report.html"
    page.write_text(report_html.render_html(summary).replace("</body>", MEASURE))
    return subprocess.run(
        [
            CHROMIUM or "chromium",
            *CHROMIUM_FLAGS,
            f"--user-data-dir={folder / 'profile'}",
            "--dump-dom",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout


def test_the_history_charts_of_builds_of_one_day_label_each_bar_and_overlap_nothing(
    sample_build: Path, tmp_path: Path
) -> None:
    """Five builds on one day (a busy night of retries): each chart's labels apart from each
    other and inside it, the day said once, and every column with its value above it."""
    assert CHROMIUM, "chromium is not installed: run `make system-deps` (or `make test`)"
    summary = BuildReport.read(sample_build)
    summary.history = [
        BuildRun(
            build_id=f"20261129T0{n}1500Z-{n:06x}",
            started_at=f"2026-11-29 0{n}:15",
            listings=1_000_000 + 5_000 * n,
            files_changed=587 + n,
            rejected_rows=n * 10,
            seconds=14.0 + n / 2,
        )
        for n in range(5)
    ]
    dom = _laid_out(summary, tmp_path)
    # rejected_rows 0 is a hairline with its value too: five labelled columns in every chart
    assert 'data-layout="0/0/5,0/0/5,0/0/5,0/0/5"' in dom
    # values to three significant digits, as people read them
    for value in ("1M", "1.01M", "1.02M", "591", "40", "14s", "16s"):
        assert f">{value}</text>" in dom, value
    # under each chart's axis, the day the five builds share once, with the first and last time
    assert dom.count(">2026-11-29 00:15 to 04:15</text>") == 4


def test_the_history_charts_render_thirty_builds(sample_build: Path, tmp_path: Path) -> None:
    """The report's history over 30 builds, one of them from before
    `files_changed` was recorded: drawn by a real browser, and screenshot."""
    assert CHROMIUM, "chromium is not installed: run `make system-deps` (or `make test`)"
    summary = BuildReport.read(sample_build)
    summary.history = [
        BuildRun(
            build_id=f"20261101T0{n:02d}000Z-{n:06x}",
            started_at=f"2026-11-{n + 1:02d} 02:00",
            listings=1_000_000 + 5_000 * n,
            files_changed=None if n == 0 else (n * 7_919) % 60_000,
            rejected_rows=n % 4 * 10,
            seconds=14.0 + n % 5,
        )
        for n in range(30)
    ]
    page = tmp_path / "report.html"
    page.write_text(report_html.render_html(summary).replace("</body>", MEASURE))
    dom = subprocess.run(
        [
            CHROMIUM,
            *CHROMIUM_FLAGS,
            f"--user-data-dir={tmp_path / 'p1'}",
            "--dump-dom",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    assert "The last 30 builds (meta.build_run)" in dom
    # A column a build; the build without files_changed has none, the builds without rejects
    # a hairline.
    assert 'data-columns="30,29,30,30"' in dom
    # every column carries its value (the one not recorded has none), no two labels meet
    assert 'data-layout="0/0/30,0/0/29,0/0/30,0/0/30"' in dom
    assert "not recorded" in dom
    shot = tmp_path / "history.png"
    page.write_text(report_html.render_html(summary))
    data = _screenshot(page, shot, tmp_path / "p2", 2400)
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", data[16:24]) == (1100, 2400) and len(data) > 40_000


def test_the_report_reads_back_as_it_was_written(sample_build: Path, tmp_path: Path) -> None:
    """Write, read, equal; and the bytes of a build's report are the record's JSON."""
    written = (sample_build / "build_report.json").read_bytes()
    summary = BuildReport.read(sample_build)
    assert summary.to_json() == written
    assert summary.site.files == orjson.loads(written)["site"]["files"]
    # A Ray night's own figures: written when set, left out when not.
    assert b'"distributed"' not in written
    ray = summary.model_copy(
        update={
            "distributed": DistributedFigures(
                engine="ray",
                shards=2,
                listings_files=3,
                shuffle_bytes=1024,
                ingest_peak_rss_mb=101.5,
                shard_peak_rss_mb=[90.0, 91.25],
                shard_seconds=[1.5, 2.0],
            ),
        }
    )
    ray.write(tmp_path)
    again = BuildReport.read(tmp_path)
    assert again == ray and again != summary
    assert list(orjson.loads((tmp_path / "build_report.json").read_bytes()))[-2:] == [
        "distributed",
        "history",
    ]


# What an earlier version did not write: these read as empty, None or false.
ADDED_SINCE = (
    "store_sizes",
    "price_by_category",
    "inputs_digest",
    "build_warnings",
    "volume_change_accepted",
    "history",
)


def test_a_report_of_an_earlier_version_reads_or_is_refused_with_why(
    sample_build: Path, tmp_path: Path
) -> None:
    data = orjson.loads((sample_build / "build_report.json").read_bytes())
    older = {k: v for k, v in data.items() if k not in ADDED_SINCE}
    for key in ("stores_unchanged", "files_removed"):
        del older["site"][key]
    summary = BuildReport.from_json(orjson.dumps(older))
    assert (summary.inputs_digest, summary.history) == (None, [])
    assert (summary.site.stores_unchanged, summary.site.files_removed) == (0, 0)
    assert summary.tables["listings"].accepted == data["tables"]["listings"]["accepted"]
    # What an earlier version wrote and this one no longer does (a shard build's, a merge's)
    # is read past.
    gone = {**data, "shard": "0/2", "merged_from": ["a", "b"]}
    assert BuildReport.from_json(orjson.dumps(gone)) == BuildReport.from_json(orjson.dumps(data))
    # A report without what every version wrote is refused, saying what is missing: the next
    # build does not compare its volumes with it, and says why.
    del older["tables"], older["site"]["files"]
    with pytest.raises(ValueError, match=r"^not a build report: tables: Field required; "):
        BuildReport.from_json(orjson.dumps(older))
    release = tmp_path / "release"
    release.mkdir()
    (release / "build_report.json").write_bytes(orjson.dumps(older))
    seal(release)
    assert previous_volumes(release) == (
        {},
        f"{release / 'build_report.json'}: cannot be read (not a build report: tables: Field "
        "required; site.files: Field required); the volumes are not compared with it",
    )
    (release / "build_report.json").write_bytes(orjson.dumps(data)[:-10])
    seal(release)
    volumes, problem = previous_volumes(release)
    assert volumes == {} and problem and ": cannot be read (" in problem


def test_every_site_count_of_a_build_has_a_field() -> None:
    with pytest.raises(ValueError, match=r"has no field for: \['pages_written'\]"):
        SiteCounts.of({"pages": 1, "files": 2, "bytes": 3, "pages_written": 1})
