"""The contract travels with the code: `docs/contract.md` exists, every
`docs/contract.md §N` a file cites is one of its sections, and nothing points at a document a
clone of this repository does not have."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONTRACT = ROOT / "docs" / "contract.md"
CITED = re.compile(r"docs/contract\.md`? (§[0-9]+(?:\.[0-9]+)?)")


def _sources() -> list[Path]:
    files = [ROOT / "README.md", ROOT / "Makefile", ROOT / "data" / "make_sample.py"]
    for folder, pattern in (
        ("pipeline", "*.py"),
        ("bench", "*.py"),
        ("sql", "*.sql"),
        ("tests", "*.py"),
        ("docs", "*.md"),
    ):
        files += sorted((ROOT / folder).rglob(pattern))
    return files


def _sections() -> set[str]:
    found = re.findall(r"^#{2,3} ([0-9]+(?:\.[0-9]+)?)\.? ", CONTRACT.read_text(), re.MULTILINE)
    return {f"§{number}" for number in found}


def test_every_cited_section_of_the_contract_exists() -> None:
    sections = _sections()
    assert {"§3.4", "§4.2", "§5.4", "§10"} <= sections
    cited = {
        (path.relative_to(ROOT).as_posix(), section)
        for path in _sources()
        for section in CITED.findall(path.read_text(encoding="utf-8"))
    }
    assert len(cited) > 25
    assert sorted(c for c in cited if c[1] not in sections) == []


def test_nothing_points_outside_the_repository() -> None:
    outside = re.compile(r"\.\./shared/|DESIGN(?:\.md| §)")
    pointing = [
        path.relative_to(ROOT).as_posix()
        for path in _sources()
        if path != Path(__file__) and outside.search(path.read_text(encoding="utf-8"))
    ]
    assert pointing == []
