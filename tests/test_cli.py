"""The command line's exit codes (README "Commands"): 1 and one line for a handled failure."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

from pipeline import cli
from pipeline.errors import BuildError, first_line
from pipeline.paths import WAREHOUSE
from tests.support.inputs import SAMPLE


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


def _fail(error: Exception) -> Callable[..., None]:
    def fail(*_: object, **__: object) -> None:
        raise error

    return fail


# Each command with arguments that reach its work, and the function that work starts with
# (in `pipeline.cli`, or in `pipeline.cli.bucket` for the object-store commands).
COMMANDS = {
    "build": (["--input", str(SAMPLE)], "build"),
    "query": (["/v1.39.0/help/index"], "answer"),
    "serve": (["--port", "0"], "serve"),
    "generate": (["--stores", "1", "--listings", "1"], "generate"),
    "merge": (["{out}"], "merge"),
    "publish": (["--to", "s3://bucket/prefix"], "bucket.publish_release"),
    "nginx-bucket": (["--to", "s3://bucket/prefix", "--dir", "{out}"], "bucket.write_nginx"),
}


def _patch(monkeypatch: pytest.MonkeyPatch, target: str, value: object) -> None:
    module, _, name = target.rpartition(".")
    monkeypatch.setattr(cli.bucket if module == "bucket" else cli, name, value)


@pytest.fixture
def published(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An output directory that looks published (an empty warehouse), for the commands that
    look before they work."""
    output = tmp_path / "out"
    output.mkdir()
    duckdb.connect(str(output / WAREHOUSE)).close()
    monkeypatch.setattr(cli.bucket, "published_release", lambda _: output)
    return output


@pytest.mark.parametrize(
    ("error", "code", "line"),
    [
        (BuildError("bad input\nmore"), 1, "{name} failed: bad input\n"),
        (FileNotFoundError("no such file"), 1, "{name} failed: no such file\n"),
        (
            RuntimeError("boom\nmore"),
            2,
            "{name} crashed: RuntimeError: boom (rerun with --debug)\n",
        ),
    ],
)
@pytest.mark.parametrize("name", COMMANDS)
def test_every_command_exits_1_on_a_handled_failure_and_2_on_a_crash(
    monkeypatch: pytest.MonkeyPatch,
    published: Path,
    name: str,
    error: Exception,
    code: int,
    line: str,
) -> None:
    args, work = COMMANDS[name]
    _patch(monkeypatch, work, _fail(error))
    output = [] if name == "nginx-bucket" else ["--output", str(published)]
    command = [name, *output, *(a.format(out=published) for a in args)]
    result = CliRunner().invoke(cli.main, command)
    assert (result.exit_code, result.stderr) == (code, line.format(name=name))
    debug = CliRunner().invoke(cli.main, [*command, "--debug"])
    assert debug.exit_code == code
    assert "Traceback" in debug.stderr


@pytest.mark.parametrize("name", ["query", "serve", "publish"])
def test_a_command_without_a_published_build_says_so(tmp_path: Path, name: str) -> None:
    args = COMMANDS[name][0]
    result = CliRunner().invoke(cli.main, [name, "--output", str(tmp_path), *args])
    assert result.exit_code == 1
    assert result.stderr.startswith(f"{name} failed: {tmp_path}")
    assert result.stderr.endswith("no published build (run `pipeline build`)\n")


def test_every_command_has_the_error_boundary() -> None:
    assert set(COMMANDS) == set(cli.main.commands)
    for command in cli.main.commands.values():
        assert "debug" in [p.name for p in command.params], command.name


def test_a_night_to_a_bucket_runs_on_ray_only(tmp_path: Path) -> None:
    """`--to` publishes from the shards of a Ray night: without `--engine ray`, one line, exit
    1, and nothing built."""
    args = ["build", "--input", str(SAMPLE), "--output", str(tmp_path / "out")]
    result = CliRunner().invoke(cli.main, [*args, "--to", "s3://bucket/site"])
    assert result.exit_code == 1
    assert result.stderr == (
        "build failed: --to: a night straight to a bucket runs on Ray (--engine ray)\n"
    )
    assert not (tmp_path / "out").exists()
    ray = CliRunner().invoke(cli.main, [*args, "--engine", "ray", "--to", "s3://b/q?x"])
    assert ray.exit_code == 1 and ray.stderr.startswith("build failed: s3://b/q?x: not a plain")
    assert not (tmp_path / "out").exists()
