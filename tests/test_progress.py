"""Progress: JSON log lines when not in a terminal, progress bars with counts in one."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

from pipeline.contract import TABLES
from pipeline.progress import Reporter
from pipeline.transform.steps import STEPS
from tests.support.inputs import SAMPLE
from tests.support.runs import run_cli


def test_json_log_lines_when_not_in_a_terminal(tmp_path: Path) -> None:
    result = run_cli("build", "--input", str(SAMPLE), "--output", str(tmp_path / "out"))
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stderr.splitlines()]
    finished = {e["stage"]: e for e in events if e["event"] == "stage_finished"}
    assert list(finished) == ["ingest", "transform", "export", "publish"]
    assert (finished["ingest"]["done"], finished["transform"]["done"]) == (len(TABLES), len(STEPS))
    assert finished["export"]["done"] == 10 and finished["export"]["seconds"] >= 0
    assert result.stdout.startswith("published build ")


def test_progress_bars_in_a_terminal() -> None:
    stream = io.StringIO()
    reporter = Reporter(stream, interactive=True)
    with reporter.stage("export", 3, "answers") as advance:
        for _ in range(3):
            advance(1)
    reporter.close()
    text = stream.getvalue()
    assert "export" in text and "3/3" in text and "answers" in text and "{" not in text


def test_progress_in_a_real_pseudo_terminal(tmp_path: Path) -> None:
    """`script` gives the build a terminal: the bars are drawn, no JSON is logged."""
    command = f"{sys.executable} -m pipeline build --input {SAMPLE} --output {tmp_path / 'out'}"
    result = subprocess.run(
        ["script", "-qec", command, "/dev/null"],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "COLUMNS": "120"},
    )
    assert "transform" in result.stdout and f"{len(STEPS)}/{len(STEPS)}" in result.stdout
    assert '"event"' not in result.stdout
