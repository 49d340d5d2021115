"""The docs and the code do not drift apart: every example query of docs/analysts.md is
followed by its result on the sample build. The commands and settings are in the generated
reference, checked by tests/test_reference.py.

The result blocks are written, not hand-typed: when the warehouse changes on purpose, run
`.venv/bin/python -m tests.test_docs --update` (it builds the shipped sample in a temporary
directory and rewrites the ```text block under each ```sql block, adding missing ones), then
review `git diff docs/analysts.md`. The tests never rewrite the guide.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import pytest

ROOT = Path(__file__).resolve().parent.parent
GUIDE = ROOT / "docs" / "analysts.md"
# A query and the result under it: ```sql ... ``` then, after blank lines, ```text ... ```.
EXAMPLE = re.compile(r"```sql\n(?P<sql>.*?)```\n(?:\s*```text\n(?P<result>.*?)```\n)?", re.S)
# The queries over history.* (their section) run on two nights of the sample, the others on one.
HISTORY = "\n## History across nights\n"


def _examples(text: str) -> list[tuple[str, str | None]]:
    return [(m["sql"], m["result"]) for m in EXAMPLE.finditer(text)]


def _sections(guide: str) -> tuple[str, str]:
    """The guide without its history section, and that section."""
    before, section = guide.split(HISTORY, 1)
    section, *after = section.split("\n## ", 1)
    return before + "".join(f"\n## {a}" for a in after), HISTORY + section


ONE_NIGHT, NIGHTS = _sections(GUIDE.read_text(encoding="utf-8"))
EXAMPLES = _examples(ONE_NIGHT)
HISTORY_EXAMPLES = _examples(NIGHTS)


def _text(value: Any) -> str:
    """One value as the guide writes it: NULL, true/false, numbers and dates as DuckDB does."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)  # the shortest exact form, as DuckDB casts a DOUBLE to text
    if isinstance(value, Decimal):
        return f"{value:f}"  # DECIMAL(18,2) keeps its two places: 0.10, 1267.99
    return str(value).replace("\\", "\\\\").replace("\n", "\\n")


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float | Decimal) and not isinstance(value, bool)


def render(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A result as text: header, rule, one line per row (numbers right-aligned), row count."""
    cells = [[_text(v) for v in row] for row in rows]
    widths = [max(len(line[i]) for line in [list(columns), *cells]) for i in range(len(columns))]
    numeric = [
        any(_is_number(row[i]) for row in rows)
        and all(row[i] is None or _is_number(row[i]) for row in rows)
        for i in range(len(columns))
    ]

    def line(values: Sequence[str]) -> str:
        return " | ".join(
            v.rjust(w) if right else v.ljust(w)
            for v, w, right in zip(values, widths, numeric, strict=True)
        ).rstrip()

    count = f"({len(rows)} row{'' if len(rows) == 1 else 's'})"
    rule = "-+-".join("-" * w for w in widths)
    return "\n".join([line(columns), rule, *(line(c) for c in cells), count]) + "\n"


def run_example(warehouse: Path, sql: str) -> str:
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        cursor = con.execute(sql)
        columns = [d[0] for d in cursor.description or []]
        return render(columns, cursor.fetchall())
    finally:
        con.close()


@pytest.mark.parametrize(
    ("sql", "expected"), EXAMPLES, ids=[sql.splitlines()[0][3:40] for sql, _ in EXAMPLES]
)
def test_every_example_query_shows_its_exact_result_on_the_sample(
    sample_build: Path, sql: str, expected: str | None
) -> None:
    assert expected is not None, (
        "no ```text result block under this query: run `python -m tests.test_docs --update`"
    )
    assert run_example(sample_build / "warehouse.duckdb", sql) == expected


@pytest.mark.parametrize(
    ("sql", "expected"),
    HISTORY_EXAMPLES,
    ids=[sql.splitlines()[0][3:40] for sql, _ in HISTORY_EXAMPLES],
)
def test_every_history_query_shows_its_exact_result_on_two_nights_of_the_sample(
    sample_nights: Path, sql: str, expected: str | None
) -> None:
    assert expected is not None, (
        "no ```text result block under this query: run `python -m tests.test_docs --update`"
    )
    assert len(HISTORY_EXAMPLES) == 3
    assert run_example(sample_nights / "warehouse.duckdb", sql) == expected


def test_the_example_queries_section_holds_only_queries_and_their_results() -> None:
    """A query in another kind of block (```duckdb, ```SQL) would go untested; a result block
    without its query would go unchecked."""
    guide = GUIDE.read_text(encoding="utf-8")
    section = guide.split("\n## Example queries\n", 1)[1].split("\n## ", 1)[0]
    assert EXAMPLES, "no ```sql block in docs/analysts.md"
    stray = EXAMPLE.sub("", section)
    assert "```" not in stray, stray[stray.index("```") :][:200]


def update_guide() -> int:
    """Rewrite the result block under every query from a fresh build of the shipped sample."""
    import tempfile

    from pipeline.build import build
    from pipeline.settings import load_settings
    from tests.support.golden import pin_build_time
    from tests.support.inputs import build_sample_nights

    pin_build_time()  # as the tests build the sample: the bulk files' index names no build
    with tempfile.TemporaryDirectory() as tmp:
        output = Path(tmp) / "out"
        build(load_settings(None, input=ROOT / "data", output=output))
        nights = build_sample_nights(Path(tmp) / "nights", Path(tmp))

        def rewrite(text: str, warehouse: Path) -> tuple[str, int]:
            def example(match: re.Match[str]) -> str:
                result = run_example(warehouse, match["sql"])
                return f"```sql\n{match['sql']}```\n\n```text\n{result}```\n"

            return EXAMPLE.subn(example, text)

        old = GUIDE.read_text(encoding="utf-8")
        before, section = old.split(HISTORY, 1)
        section, *after = section.split("\n## ", 1)
        before, count = rewrite(before, output / "warehouse.duckdb")
        section, more = rewrite(section, nights / "warehouse.duckdb")
        rest = "".join(f"\n## {a}" for a in after)
        if rest:
            rest, most = rewrite(rest, output / "warehouse.duckdb")
            more += most
        new, count = before + HISTORY + section + rest, count + more
    GUIDE.write_text(new, encoding="utf-8")
    changed = "unchanged" if new == old else "rewritten"
    print(f"{GUIDE.relative_to(ROOT)}: {count} query results {changed}")
    return 0


def test_an_older_duckdb_opens_the_warehouse(sample_build: Path) -> None:
    """The file is written for DuckDB 1.2 and later (storage_compatibility_version)."""
    import subprocess

    python = ROOT / ".venv-duckdb1" / "bin" / "python"
    assert python.exists(), "run `make setup`: it installs DuckDB 1.2.2 beside the project"
    script = (
        "import duckdb, sys; con = duckdb.connect(sys.argv[1], read_only=True); "
        "print(duckdb.__version__, con.execute('SELECT count(*) FROM marts.listing').fetchall()[0][0])"
    )
    out = subprocess.run(
        [str(python), "-c", script, str((sample_build / "warehouse.duckdb").resolve())],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    con = duckdb.connect(str(sample_build / "warehouse.duckdb"), read_only=True)
    expected = con.execute("SELECT count(*) FROM marts.listing").fetchall()[0][0]
    con.close()
    assert out == ["1.2.2", str(expected)]


def test_the_installed_shell_opens_the_warehouse(sample_build: Path) -> None:
    """The analyst's hour on a fresh machine: `make build` installs `.venv/bin/duckdb` (PyPI
    duckdb-cli), which opens the warehouse read-only and runs the README's first query."""
    import subprocess

    shell = ROOT / ".venv" / "bin" / "duckdb"
    assert shell.exists(), "run `make setup`: it installs the DuckDB shell (duckdb-cli)"
    warehouse = str((sample_build / "warehouse.duckdb").resolve())
    sql = (
        "SELECT count(*) FROM marts.listing; "
        "SELECT count(*) > 0 FROM meta.schema_doc WHERE schema_name = 'marts';"
    )
    out = subprocess.run(
        [str(shell), "-readonly", "-noheader", "-csv", warehouse, "-c", sql],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.split()
    con = duckdb.connect(warehouse, read_only=True)
    expected = con.execute("SELECT count(*) FROM marts.listing").fetchall()[0][0]
    con.close()
    assert out == [str(expected), "true"]


def test_build_history_is_carried_from_build_to_build(tmp_path: Path) -> None:
    from pipeline.build import build
    from pipeline.settings import load_settings
    from tests.support.inputs import write_inputs

    output = tmp_path / "out"
    ids = [
        build(load_settings(None, input=write_inputs(tmp_path / "in"), output=output)).build_id
        for _ in range(3)
    ]
    con = duckdb.connect(str(output / "warehouse.duckdb"), read_only=True)
    assert [
        r[0]
        for r in con.execute(
            "SELECT build_id FROM meta.build_run ORDER BY started_at, build_id"
        ).fetchall()
    ] == sorted(ids)
    con.close()


# --- facts the prose states, checked against their homes ------------------------------------

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def test_the_readme_counts_the_samples_stores_as_the_build_does(sample_build: Path) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    stated = re.findall(r"It has (\d+) stores", readme)
    report = json.loads((sample_build / "build_report.json").read_text(encoding="utf-8"))
    assert stated == [str(report["stores"])]


def test_the_serving_guide_states_the_gzip_level_and_types_the_servers_use() -> None:
    from pipeline.api.http import GZIP_LEVEL, GZIP_TYPES

    guide = (ROOT / "docs" / "serving.md").read_text(encoding="utf-8")
    row = next(line for line in guide.splitlines() if line.startswith("| gzip |"))
    assert re.findall(r"Level (\d+)\.", row) == [str(GZIP_LEVEL)]
    levels = re.findall(r"(?:at|to) level (\d+) \(", guide)
    assert levels and set(levels) == {str(GZIP_LEVEL)}, levels
    named = re.search(r"bytes, ([A-Z]+(?:, [A-Z]+)*(?: or [A-Z]+)?) \(nginx's gzip filter\)", row)
    assert named is not None, row
    words = {"application/json": "JSON", "text/html": "HTML", "text/csv": "CSV"}
    assert set(re.split(r", | or ", named[1])) == {words[t] for t in GZIP_TYPES}


def test_every_name_the_docs_place_in_a_module_is_there() -> None:
    """`Name` in `pipeline/x.py`, and `pipeline.x.Name`: a name moved away would send the
    reader to the wrong file."""
    import importlib

    placed = 0
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        for name, module in re.findall(r"`([A-Za-z_][\w.]*)` in `(pipeline/[\w/]+\.py)`", text):
            source = (ROOT / module).read_text(encoding="utf-8")
            first = name.split(".")[0]
            assert re.search(rf"^\s*(?:def |class |async def )?{first}\b", source, re.M), (
                f"{doc.name}: `{name}` is not in {module}"
            )
            placed += 1
        for dotted in re.findall(r"`(pipeline(?:\.\w+)+)`", text):
            parts = dotted.split(".")
            for cut in range(len(parts), 0, -1):  # the longest module, then its attributes
                try:
                    found: Any = importlib.import_module(".".join(parts[:cut]))
                except ModuleNotFoundError:
                    continue
                for attribute in parts[cut:]:
                    assert hasattr(found, attribute), f"{doc.name}: `{dotted}` does not exist"
                    found = getattr(found, attribute)
                placed += 1
                break
    assert placed >= 4


def test_the_guides_price_change_is_the_one_the_tests_make(tmp_path: Path) -> None:
    """docs/analysts.md's commands make the history queries' second night as
    `build_sample_nights` does: the same listings file, a dollar dearer."""
    import subprocess

    from tests.support.inputs import SAMPLE, raise_prices

    guide = GUIDE.read_text(encoding="utf-8")
    script = re.search(r'\.venv/bin/python -c "\n(.*?)"\n', guide, re.S)
    assert script is not None, "no price change in the history section's commands"
    listings = SAMPLE / "stores" / "listings" / "card-cellar.csv"
    ours, theirs = tmp_path / "ours.csv", tmp_path / "theirs.csv"
    ours.write_bytes(listings.read_bytes())
    theirs.write_bytes(listings.read_bytes())
    raise_prices(ours)
    code = script[1].replace("/tmp/dearer/stores/listings/card-cellar.csv", str(theirs))
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
    assert theirs.read_bytes() == ours.read_bytes() != listings.read_bytes()


@pytest.mark.parametrize(("name", "most"), [("README.md", 250), ("docs/benchmarks.md", 200)])
def test_the_short_docs_stay_short(name: str, most: int) -> None:
    """The README is what a newcomer reads first, the benchmarks' page its latest figures: the
    reference and the history belong in the guides and in git."""
    assert len((ROOT / name).read_text().splitlines()) <= most


if __name__ == "__main__":
    if sys.argv[1:] != ["--update"]:
        sys.exit(
            "usage: python -m tests.test_docs --update  (rewrites the results in docs/analysts.md)"
        )
    sys.exit(update_guide())
