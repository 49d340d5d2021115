"""The build report's page, `build_report.html`: the report's figures (`report`) as tables and
inline SVG charts, readable offline, no script."""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Sequence
from pathlib import Path

from pipeline.export.records.report import BuildReport, BuildRun, CategoryPrices, RowsByReason
from pipeline.paths import REPORT_HTML


def bar_chart(title: str, items: Sequence[tuple[str, float]], unit: str = "") -> str:
    """A horizontal bar chart as inline SVG: readable offline, no script, no network."""
    if not items:
        return f"<h3>{html.escape(title)}</h3><p>Nothing to show.</p>"
    top = max(v for _, v in items) or 1.0
    row, label_w, bar_w = 18, 220, 420
    bars = []
    for i, (label, value) in enumerate(items):
        y = i * row
        width = max(1.0, value / top * bar_w)
        bars.append(
            f'<text x="{label_w - 6}" y="{y + 13}" text-anchor="end">'
            f"{html.escape(label[:34])}</text>"
            f'<rect x="{label_w}" y="{y + 3}" width="{width:.1f}" height="{row - 6}" '
            'fill="#4c78a8"/>'
            f'<text x="{label_w + width + 4:.1f}" y="{y + 13}">{value:,.4g}{unit}</text>'
        )
    height = len(items) * row + 4
    return (
        f"<h3>{html.escape(title)}</h3>"
        f'<svg role="img" aria-label="{html.escape(title)}" width="{label_w + bar_w + 120}" '
        f'height="{height}" font-size="12" font-family="system-ui,sans-serif">{"".join(bars)}</svg>'
    )


def range_chart(title: str, items: Sequence[CategoryPrices]) -> str:
    """Per category: a bar from the 10th to the 90th percentile price, a tick at the median."""
    if not items:
        return f"<h3>{html.escape(title)}</h3><p>Nothing to show.</p>"
    top = max(i.p90 for i in items) or 1.0
    row, label_w, bar_w = 20, 220, 420
    parts = []
    for n, item in enumerate(items):
        y = n * row
        x0, x1, xm = (label_w + p / top * bar_w for p in (item.p10, item.p90, item.median))
        parts.append(
            f'<text x="{label_w - 6}" y="{y + 14}" text-anchor="end">'
            f"{html.escape(item.category[:34])}</text>"
            f'<rect x="{x0:.1f}" y="{y + 5}" width="{max(x1 - x0, 1):.1f}" height="{row - 10}" '
            f'fill="#f58518"/><rect x="{xm - 1:.1f}" y="{y + 2}" width="2" height="{row - 4}" '
            f'fill="#000"/><text x="{x1 + 4:.1f}" y="{y + 14}">median {item.median:,.2f}, '
            f"p10-p90 {item.p10:,.2f}-{item.p90:,.2f}</text>"
        )
    return (
        f"<h3>{html.escape(title)}</h3>"
        f'<svg role="img" aria-label="{html.escape(title)}" width="{label_w + bar_w + 260}" '
        f'height="{len(items) * row + 4}" font-size="12" font-family="system-ui,sans-serif">'
        f"{''.join(parts)}</svg>"
    )


def compact(value: float) -> str:
    """A number to three significant digits, as a column's label: 14, 1.16, 7.92k, 1.15M."""
    for size, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= size * 0.9995:  # 999,999 is 1M, not 1e+03k
            return f"{value / size:.3g}{suffix}"
    return f"{value:.3g}"


# A text's width per character in the charts' 12 px font, a little more than any digit's.
CHAR_W = 7.2


def _start_labels(values: Sequence[tuple[str, str | None, float | None]]) -> tuple[str, str]:
    """The starts said under the axis, left and right: the first and the last build's; their
    day once, with both times, when they share it (the right one then empty)."""
    first, last = values[0][1] or "", values[-1][1] or ""
    if first == last or len(values) == 1:
        return first, ""
    if first[:10] == last[:10]:
        return f"{first} to {last[11:]}", ""
    return first, last


def history_chart(
    title: str, values: Sequence[tuple[str, str | None, float | None]], unit: str = ""
) -> str:
    """One measure over the last builds (id, start, value), oldest left: a column a build with
    its value above it (and its id, start and value in a tooltip), the newest in a darker blue,
    the first and last starts under the axis, never over each other."""
    if not any(v is not None for _, _, v in values):
        return f"<h3>{html.escape(title)}</h3><p>Nothing to show.</p>"
    top = max(v for _, _, v in values if v is not None) or 1.0
    left, bar, plot_h, head = 70, 24, 124, 24  # head: room for the tallest column's value
    first, last = _start_labels(values)
    # Wide enough a column for its value, and an axis long enough for both starts apart.
    step = max(bar + 8, math.ceil((len(first) + len(last) + 3) * CHAR_W / len(values)))
    axis = step * len(values)
    parts = [
        f'<text x="{left - 6}" y="{head + 4}" text-anchor="end">{compact(top)}{unit}</text>'
        f'<text x="{left - 6}" y="{plot_h + 4}" text-anchor="end">0</text>'
        f'<line x1="{left}" y1="{plot_h + 0.5}" x2="{left + axis}" '
        f'y2="{plot_h + 0.5}" stroke="#999"/>'
    ]
    for n, (build_id, started, value) in enumerate(values):
        x = left + n * step + (step - bar) / 2
        tip = f"{build_id} ({started}): " + ("not recorded" if value is None else f"{value:,}")
        if value is None:
            parts.append(
                f'<text x="{x + bar / 2}" y="{plot_h - 4}" text-anchor="middle">'
                f"<title>{html.escape(tip)}</title>-</text>"
            )
            continue
        height = max(1.0, value / top * (plot_h - head))
        fill = "#1f4e79" if n == len(values) - 1 else "#4c78a8"
        parts.append(
            f'<rect x="{x}" y="{plot_h - height:.1f}" width="{bar}" height="{height:.1f}" '
            f'fill="{fill}"><title>{html.escape(tip)}{unit}</title></rect>'
            f'<text x="{x + bar / 2}" y="{plot_h - height - 4:.1f}" text-anchor="middle" '
            f'font-size="10">{compact(value)}{unit.strip()}</text>'
        )
    parts.append(f'<text x="{left}" y="{plot_h + 16}">{html.escape(first)}</text>')
    if last:
        parts.append(
            f'<text x="{left + axis}" y="{plot_h + 16}" text-anchor="end">'
            f"{html.escape(last)}</text>"
        )
    width = max(left + axis + 10, left + len(first) * CHAR_W + 10, 420)
    return (
        f"<h3>{html.escape(title)}</h3>"
        f'<svg role="img" aria-label="{html.escape(title)}" width="{width:.0f}" '
        f'height="{plot_h + 22}" font-size="12" font-family="system-ui,sans-serif">'
        f"{''.join(parts)}</svg>"
    )


# The history's charts: title, measure, unit.
HISTORY_CHARTS: tuple[tuple[str, Callable[[BuildRun], float | None], str], ...] = (
    ("Listings (accepted)", lambda r: r.listings, ""),
    ("Site files changed or new", lambda r: r.files_changed, ""),
    ("Rejected rows", lambda r: r.rejected_rows, ""),
    ("Duration (ingest, transform, export)", lambda r: r.seconds, " s"),
)


def _history(summary: BuildReport) -> str:
    runs = summary.history
    if not runs:
        return ""
    charts = [
        history_chart(title, [(r.build_id, r.started_at, measure(r)) for r in runs], unit)
        for title, measure, unit in HISTORY_CHARTS
    ]
    heading = f"<h2>The last {len(runs)} builds (meta.build_run)</h2>\n"
    return f'<section id="history">{heading}{"".join(charts)}</section>'


def _table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in row) + "</tr>" for row in rows
    )
    return f"<table><tr>{head}</tr>{body}</table>"


def _by_reason(found: RowsByReason) -> list[object]:
    """A row of the rejects' or the warnings' table: its rows' count, the first as examples."""
    first = ", ".join(map(str, found.first_rows))
    if found.rows > len(found.first_rows):
        first += ", ..."
    return [found.table, found.file or "", found.column, found.reason, found.rows, first]


def _charts(summary: BuildReport) -> str:
    site = summary.site
    stores = [(s.store, s.listings) for s in summary.store_sizes]
    rejects = [(r.table + ": " + r.reason, r.rows) for r in summary.rejects]
    files = [
        ("changed or new", site.files - site.files_unchanged),
        ("unchanged (hard links)", site.files_unchanged),
        ("removed", site.files_removed),
    ]
    return "\n".join(
        [
            bar_chart("Listings per store (largest 40)", stores),
            range_chart("Price by category (listings for sale)", summary.price_by_category),
            bar_chart("Rejected rows by table and reason", rejects),
            bar_chart("Stage timings", list(summary.stages_seconds.items()), " s"),
            bar_chart("Site files since the previous build", files),
        ]
    )


def render_html(summary: BuildReport) -> str:
    tables = summary.tables
    site = summary.site
    charts = _charts(summary)
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Build {summary.build_id}</title>
<style>body{{font-family:system-ui,sans-serif;max-width:70rem;margin:2rem auto;padding:0 1rem}}
table{{border-collapse:collapse;margin-bottom:1.5rem}}
td,th{{border:1px solid #ccc;padding:.25rem .5rem;text-align:left}}
td:nth-child(n+2){{font-variant-numeric:tabular-nums}}</style></head><body>
<h1>Build {html.escape(summary.build_id)}</h1>
<p>Input <code>{html.escape(summary.input)}</code>, started {summary.started_at},
finished {summary.finished_at}. {summary.stores} stores,
{site.pages} inventory pages, {site.files} files, {site.bytes:,} bytes;
{site.stores_unchanged} stores unchanged since the previous build (linked, not
rebuilt).</p>
<h2>At a glance</h2>
{charts}
{_history(summary)}
<h2>Input tables</h2>
{
        _table(
            ["table", "rows", "accepted", "rejected", "files"],
            [[n, t.rows, t.accepted, t.rejected, ", ".join(t.files)] for n, t in tables.items()],
        )
    }
<h2>Rejected rows</h2>
{
        _table(
            ["table", "file", "column", "reason", "rows", "first rows"],
            [_by_reason(r) for r in summary.rejects],
        )
        if summary.rejects
        else "<p>None.</p>"
    }
<h2>Warnings</h2>
{
        _table(
            ["table", "file", "column", "reason", "rows", "first rows"],
            [_by_reason(r) for r in summary.warnings],
        )
        if summary.warnings
        else "<p>None.</p>"
    }
{"".join(f"<p><b>Build warning:</b> {html.escape(w)}</p>" for w in summary.build_warnings)}
<h2>Timings</h2>
{_table(["stage", "seconds"], list(summary.stages_seconds.items()))}
{_table(["step", "rows", "seconds"], [[s.name, s.rows, s.seconds] for s in summary.steps])}
</body></html>
"""


def write(release: Path, summary: BuildReport) -> None:
    (release / REPORT_HTML).write_text(render_html(summary), encoding="utf-8")
