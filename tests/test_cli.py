"""The command line's exit codes (README "Commands"): 1 and one line for a handled failure."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from pipeline import cli
from pipeline.errors import BuildError, first_line
from tests.conftest import SAMPLE


@pytest.mark.parametrize(
    ("message", "line"),
    [("two\nlines", "two"), ("", "BuildError"), ("\n  \n", "BuildError"), ("\nsecond", "second")],
)
def test_the_first_line_of_an_error(message: str, line: str) -> None:
    assert first_line(BuildError(message)) == line


def test_a_failure_without_a_message_is_still_one_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    def fail(*_: object) -> None:
        raise BuildError("")

    monkeypatch.setattr(cli, "build", fail)
    result = CliRunner().invoke(
        cli.main, ["build", "--input", str(SAMPLE), "--output", str(tmp_path)]
    )
    assert result.exit_code == 1
    assert result.stderr == "build failed: BuildError\n"
