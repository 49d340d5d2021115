"""Typed settings: a bad value is an error when the settings are loaded, naming the setting."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.settings import load_settings
from pipeline.shard import Shard


@pytest.mark.parametrize("text", ["2/2", "5/3", "1/0", "x", "1", "-1/2", "1/2/3"])
def test_a_bad_shard_is_refused_when_the_settings_load(text: str) -> None:
    with pytest.raises(ValueError, match=r"^settings: shard: .*shard"):
        load_settings(None, shard=text)


def test_a_shard_from_the_command_line_the_environment_or_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert load_settings(None, shard="1/3").shard == Shard(1, 3)
    monkeypatch.setenv("PIPELINE_SHARD", "0/2")
    assert load_settings(None).shard == Shard(0, 2)
    monkeypatch.delenv("PIPELINE_SHARD")
    config = tmp_path / "pipeline.toml"
    config.write_text('shard = "3/4"\n')
    settings = load_settings(config)
    assert settings.shard == Shard(3, 4)
    assert settings.model_dump()["shard"] == "3/4"
    config.write_text('shard = "4/4"\n')
    with pytest.raises(ValueError, match=r"pipeline\.toml: shard: .*the index must be below"):
        load_settings(config)


def test_a_shard_holds_the_stores_whose_key_hashes_to_it() -> None:
    keys = [f"store-{n}" for n in range(200)]
    shards = [Shard(i, 3) for i in range(3)]
    held = [[k for k in keys if s.holds(k)] for s in shards]
    assert sorted(k for part in held for k in part) == sorted(keys)  # each store exactly once
    assert all(part for part in held)
    assert Shard(0, 1).holds("anything")
