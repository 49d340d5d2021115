"""A build's exit codes from the command line: a settings error is 1 with its one line (a
traceback with `--debug`), a crash is 2. Every command's exit codes: tests/test_cli.py."""

from __future__ import annotations

from pathlib import Path

from tests.support.inputs import SAMPLE
from tests.support.runs import run_cli


def test_exit_codes_settings_errors_and_crashes(tmp_path: Path) -> None:
    config = tmp_path / "typo.toml"
    config.write_text("max_rejects_share = 0.5\n")  # a typo is an error, not ignored
    args = ("build", "--input", str(SAMPLE), "--output", str(tmp_path / "out"))
    bad = run_cli(*args, "--config", str(config))
    assert bad.returncode == 1 and "max_rejects_share" in bad.stderr + bad.stdout
    debug = run_cli(*args, "--config", str(config), "--debug")
    assert debug.returncode == 1 and "Traceback" in debug.stderr
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the output directory should be")
    crash = run_cli("build", "--input", str(SAMPLE), "--output", str(blocker / "out"))
    assert crash.returncode == 2
    assert crash.stderr.strip().splitlines()[-1].startswith("build crashed: ")
    assert "Traceback" not in crash.stderr  # every command's exit codes: tests/test_cli.py
