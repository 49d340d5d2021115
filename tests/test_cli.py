"""The command line's exit codes (docs/operating.md, "Failures and exit codes"): 1 and one
line for a handled failure."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

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
    "ray-build": (["--input", str(SAMPLE), "--to", "s3://bucket/prefix"], "build_on_ray"),
    "query": (["/v1.39.0/help/index"], "answer"),
    "serve": (["--port", "0"], "serve"),
    "generate": (["--stores", "1", "--listings", "1"], "generate"),
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


def test_the_ray_night_has_its_options_and_a_bucket_to_publish_to(tmp_path: Path) -> None:
    """The Ray options belong to `pipeline ray-build` alone: `pipeline build` refuses them as
    usage errors (exit 2). A Ray night publishes to a bucket: without one (`--to` or ray.to),
    one line, exit 1; with a URL that is not a plain bucket URL, the same; nothing built."""
    args = ["--input", str(SAMPLE), "--output", str(tmp_path / "out")]
    for option in (["--to", "s3://bucket/site"], ["--engine", "ray"], ["--shards", "2"]):
        result = CliRunner().invoke(cli.main, ["build", *args, *option])
        assert result.exit_code == 2 and f"No such option '{option[0]}'" in result.stderr
    result = CliRunner().invoke(cli.main, ["ray-build", *args])
    assert result.exit_code == 1
    assert result.stderr == (
        "ray-build failed: a Ray night publishes to a bucket: give --to s3://bucket/prefix "
        "(or publish.to)\n"
    )
    ray = CliRunner().invoke(cli.main, ["ray-build", *args, "--to", "s3://b/q?x"])
    assert ray.exit_code == 1 and ray.stderr.startswith("ray-build failed: s3://b/q?x: not a plain")
    assert not (tmp_path / "out").exists()


def _calls(monkeypatch: pytest.MonkeyPatch, target: str) -> list[tuple[Any, ...]]:
    """The arguments `target` is called with (positional, then keywords), in place of its work,
    which fails at once ("called", exit 1)."""
    calls: list[tuple[Any, ...]] = []

    def record(*args: Any, **kwargs: Any) -> None:
        calls.append((*args, kwargs))
        raise BuildError("called")

    _patch(monkeypatch, target, record)
    return calls


def test_publish_reads_its_options_from_the_settings_file_the_environment_and_the_line(
    monkeypatch: pytest.MonkeyPatch, published: Path, tmp_path: Path
) -> None:
    """Each option is the setting `publish.*`: the file says, the environment overrides it,
    the command line overrides both."""
    calls = _calls(monkeypatch, "bucket.publish_release")
    config = tmp_path / "pipeline.toml"
    config.write_text('[publish]\nto = "s3://bucket/file"\njobs = 3\nkeep = 4\ngrace = 9.5\n')
    monkeypatch.setenv("PIPELINE_PUBLISH__KEEP", "5")
    args = ["publish", "--config", str(config), "--output", str(published), "--lease-seconds", "7"]
    result = CliRunner().invoke(cli.main, args)
    assert result.stderr == "publish failed: called\n"
    *_, url, options = calls[0]
    assert url == "s3://bucket/file"
    assert options == {
        "jobs": 3,
        "take_over": False,
        "allow_older": False,
        "lease_seconds": 7,
        "keep": 5,
        "grace": 9.5,
    }
    CliRunner().invoke(cli.main, [*args, "--to", "s3://bucket/line", "--jobs", "2"])
    assert calls[1][1] == "s3://bucket/line" and calls[1][2]["jobs"] == 2


def test_publish_without_a_bucket_names_the_setting_and_its_option(
    monkeypatch: pytest.MonkeyPatch, published: Path
) -> None:
    calls = _calls(monkeypatch, "bucket.publish_release")
    result = CliRunner().invoke(cli.main, ["publish", "--output", str(published)])
    assert (result.exit_code, result.stderr) == (
        1,
        "publish failed: publish.to is not set: give --to, or set it in the settings\n",
    )
    assert calls == []


def test_an_option_out_of_its_settings_range_is_a_usage_error(published: Path) -> None:
    result = CliRunner().invoke(cli.main, ["publish", "--to", "s3://b/p", "--jobs", "0"])
    assert result.exit_code == 2
    assert "Invalid value for '--jobs': 0 is not in the range x>=1" in result.stderr


def test_serve_reads_host_port_and_threads_from_the_settings(
    monkeypatch: pytest.MonkeyPatch, published: Path, tmp_path: Path
) -> None:
    calls = _calls(monkeypatch, "serve")
    config = tmp_path / "pipeline.toml"
    config.write_text('[serve]\nhost = "0.0.0.0"\nport = 8123\nthreads = 3\ncache_mb = 7\n')
    args = ["serve", "--config", str(config), "--output", str(published)]
    assert CliRunner().invoke(cli.main, args).stderr == "serve failed: called\n"
    CliRunner().invoke(cli.main, [*args, "--port", "0", "--threads", "2"])
    (output, host, port, limits, _), (_, _, again, changed, _) = calls
    assert (output, host, port, limits.threads, limits.cache_mb) == (
        published,
        "0.0.0.0",
        8123,
        3,
        7,
    )
    assert (again, changed.threads, changed.cache_mb) == (0, 2, 7)


def test_nginx_bucket_reads_the_bucket_folder_and_addresses_from_the_settings(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    calls = _calls(monkeypatch, "bucket.write_nginx")
    config = tmp_path / "pipeline.toml"
    config.write_text(
        '[publish]\nto = "s3://bucket/site"\n'
        f'[serve]\nnginx_bucket_dir = "{tmp_path / "conf"}"\nnginx_listen = "0.0.0.0:80"\n'
    )
    result = CliRunner().invoke(
        cli.main, ["nginx-bucket", "--config", str(config), "--upstream", "10.0.0.1:8000"]
    )
    assert result.stderr == "nginx-bucket failed: called\n"
    assert len(calls) == 1
    *arguments, limits, keywords = calls[0]
    assert arguments == ["s3://bucket/site", tmp_path / "conf", "0.0.0.0:80", "10.0.0.1:8000"]
    assert (limits.nginx_listen, keywords) == ("0.0.0.0:80", {})  # the `serve` settings whole


def test_query_says_it_cannot_send_a_search_s_body() -> None:
    """`pipeline query` answers a GET: its help sends a search to `pipeline serve`."""
    result = CliRunner().invoke(cli.main, ["query", "--help"])
    assert result.exit_code == 0
    text = " ".join(result.output.split())
    assert "cannot send a body" in text and "POST .../search" in text
