"""Typed settings: a bad value is an error when the settings are loaded, naming the setting;
a key of an older layout is refused with the key that replaced it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from pipeline import cli
from pipeline.settings import load_settings
from tests.support.inputs import SAMPLE


@pytest.mark.parametrize(
    ("toml", "hint"),
    [
        ("duckdb_threads = 4\n", "duckdb_threads: moved to build.duckdb_threads"),
        ("releases_kept = 1\n", "releases_kept: moved to build.releases_kept"),
        ("export_batch_listings = 10\n", "export_batch_listings: moved to export.batch_listings"),
        ('nginx_listen = "0.0.0.0:80"\n', "nginx_listen: moved to serve.nginx_listen"),
        ("[volume]\nmax_drop = 0.5\n", "volume: moved to build.volume"),
        ('[ray]\nshards = 4\nto = "s3://b/p"\n', "ray.to: moved to publish.to"),
        ('shard = "0/2"\n', "shard: removed; a cluster build is `pipeline ray-build`"),
        ('engine = "ray"\n', "engine: removed; one machine is `pipeline build`, a cluster "),
    ],
)
def test_an_old_key_in_the_file_is_refused_naming_the_file_and_the_new_key(
    tmp_path: Path, toml: str, hint: str
) -> None:
    config = tmp_path / "pipeline.toml"
    config.write_text(toml)
    with pytest.raises(ValueError) as refused:
        load_settings(config)
    assert str(refused.value).startswith(f"{config}: {hint}")
    assert "\n" not in str(refused.value)


def test_every_old_key_of_a_file_is_said_on_one_line(tmp_path: Path) -> None:
    config = tmp_path / "pipeline.toml"
    config.write_text("duckdb_threads = 4\n[export]\nlimits = [10]\n[ray]\nto = 's3://b/p'\n")
    with pytest.raises(ValueError) as refused:
        load_settings(config)
    assert str(refused.value) == (
        f"{config}: duckdb_threads: moved to build.duckdb_threads; "
        f"{config}: ray.to: moved to publish.to"
    )


@pytest.mark.parametrize(
    ("variable", "hint"),
    [
        ("PIPELINE_DUCKDB_THREADS", "moved to PIPELINE_BUILD__DUCKDB_THREADS"),
        ("pipeline_max_reject_share", "moved to PIPELINE_BUILD__MAX_REJECT_SHARE"),
        ("PIPELINE_VOLUME__MIN_COUNT", "moved to PIPELINE_BUILD__VOLUME__MIN_COUNT"),
        ("PIPELINE_RAY__TO", "moved to PIPELINE_PUBLISH__TO"),
        ("PIPELINE_NGINX_UPSTREAM", "moved to PIPELINE_SERVE__NGINX_UPSTREAM"),
        ("PIPELINE_SHARD", "removed; a cluster build is `pipeline ray-build`"),
    ],
)
def test_an_old_key_in_the_environment_is_refused_naming_the_new_variable(
    monkeypatch: pytest.MonkeyPatch, variable: str, hint: str
) -> None:
    monkeypatch.setenv(variable, "1")
    with pytest.raises(ValueError) as refused:
        load_settings(None)
    assert str(refused.value) == f"{variable}: {hint}"


def test_the_new_keys_load_from_the_file_and_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "pipeline.toml"
    config.write_text(
        "[build]\nduckdb_threads = 4\n[build.volume]\nmax_drop = 0.5\n"
        '[publish]\nto = "s3://b/p"\n[export]\nbatch_listings = 10\n'
    )
    monkeypatch.setenv("PIPELINE_BUILD__RELEASES_KEPT", "1")
    monkeypatch.setenv("PIPELINE_TEST_KILL_TRIGGER", "x")  # not a setting: left alone
    settings = load_settings(config)
    assert (settings.build.duckdb_threads, settings.build.volume.max_drop) == (4, 0.5)
    assert (settings.publish.to, settings.export.batch_listings) == ("s3://b/p", 10)
    assert settings.build.releases_kept == 1


def test_an_old_key_passed_in_code_is_refused_with_its_hint() -> None:
    with pytest.raises(
        ValueError, match=r"^settings: releases_kept: moved to build\.releases_kept$"
    ):
        load_settings(None, releases_kept=1)


def test_a_batch_size_changes_no_page_digest() -> None:
    """`export.batch_listings` bounds memory only: the digests (`pages_json`) leave it out, as
    they did when it was a top-level key, so a new batch size rebuilds no store."""
    default, other = load_settings(None).export, load_settings(None, export={"batch_listings": 7})
    assert default.pages_json() == other.export.pages_json()
    assert b"batch_listings" not in default.pages_json()
    assert default.pages_json() != load_settings(None, export={"limits": [5]}).export.pages_json()


@pytest.mark.parametrize("name", ["out?x", "out*", "out[1]", "out\\x"])
def test_an_output_path_duckdb_would_misread_is_refused_in_one_line(
    tmp_path: Path, name: str
) -> None:
    """DuckDB reads a `?` in a database's path as the start of its options (the WAL goes to
    another folder and the build crashes at its first commit), `*`, `?` and `[` in a file's
    path as a glob, and a backslash as a separator: such an output is refused by name before
    any work, as a setting, from the command line too."""
    output = tmp_path / name
    with pytest.raises(ValueError, match=r"^settings: output: .*" + re.escape(f"'{output}'")):
        load_settings(None, output=output)
    done = CliRunner().invoke(cli.main, ["build", "--input", str(SAMPLE), "--output", str(output)])
    assert done.exit_code == 1, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("build failed: settings: output: ") and str(output) in line, line
    assert not output.exists()
