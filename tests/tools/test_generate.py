"""`pipeline generate`: synthetic inputs of any size, the same for the same seed, with store
sizes skewed as real stores' are."""

from __future__ import annotations

from pathlib import Path

from pipeline.tools.generate import generate, store_sizes


def test_generate_is_deterministic_and_skewed(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    assert generate(a, 30, 5_000, seed=3) == generate(b, 30, 5_000, seed=3)
    for file in sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file()):
        assert (a / file).read_bytes() == (b / file).read_bytes(), file
    sizes = store_sizes(2_000, 10_000_000)["size"]
    assert sizes.sum() == 10_000_000
    assert 100_000 <= sizes.max() <= 200_000
    assert sizes.median() < 2_000
