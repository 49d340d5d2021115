"""Typed settings: a bad value is an error when the settings are loaded, naming the setting."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.settings import load_settings


@pytest.mark.parametrize("line", ['engine = "ray"', 'shard = "0/2"'])
def test_the_settings_of_removed_ways_to_build_are_refused(tmp_path: Path, line: str) -> None:
    """A settings file of a removed way to build (`engine`: a Ray night is `pipeline
    ray-build`; `shard`: one machine builds every store) is refused, naming the key, rather
    than building another way than it says."""
    config = tmp_path / "pipeline.toml"
    config.write_text(f"{line}\n")
    key = line.partition(" ")[0]
    with pytest.raises(ValueError, match=rf"^{config}: {key}: Extra inputs are not permitted"):
        load_settings(config)
