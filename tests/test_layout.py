"""The project's structure holds: every SQL file runs exactly once, every table is documented,
the stages import only the stages before them, and the tests' helpers live in tests/support."""

from __future__ import annotations

import ast
import graphlib
import re
from pathlib import Path

import duckdb
import pytest

from pipeline.contract import TABLES
from pipeline.db import MACROS_FILE, SQL_DIR, SqlFile
from pipeline.distributed.finalize import CLUSTERED
from pipeline.transform.steps import KEPT_PRODUCT_ENTRIES, PARTS, all_sql_files
from tests.support.runs import rows


def test_every_sql_file_is_in_the_step_list_exactly_once() -> None:
    on_disk = sorted(
        p.relative_to(SQL_DIR).with_suffix("").as_posix()
        for p in SQL_DIR.rglob("*.sql")
        if p != MACROS_FILE
    )
    listed = [f.path for f in all_sql_files()]
    assert len(listed) == len(set(listed)), "a SQL file is listed twice"
    assert sorted(listed) == on_disk


def test_a_tables_row_order_is_written_once_in_its_sql_file() -> None:
    """The distributed build gathers marts.listing in the order its SQL file closes with."""
    listing = SqlFile("marts/listing")
    assert listing.table == "marts.listing"
    assert (listing.order_by or "").startswith("store_hash, store_key, channel_id")
    assert SqlFile("marts/sku").order_by is None
    assert {"marts.listing": f" ORDER BY {listing.order_by}"} == CLUSTERED


def test_sql_files_only_select() -> None:
    """Every SQL file but the macros' (`CREATE TEMP MACRO`, made on each connection)."""
    for file in set(SQL_DIR.rglob("*.sql")) - {MACROS_FILE}:
        text = file.read_text().lower()
        for word in ("create ", "insert ", "copy ", "delete ", "update ", "drop "):
            code = "\n".join(line.split("--")[0] for line in text.splitlines())
            assert word not in code, f"{file}: SQL files hold one SELECT, no {word.strip()}"


def test_every_table_and_column_carries_a_comment(sample_build: Path) -> None:
    con = duckdb.connect(str(sample_build / "warehouse.duckdb"), read_only=True)
    tables = rows(
        con,
        "SELECT schema_name, table_name, comment FROM duckdb_tables() "
        "WHERE database_name = 'warehouse' ORDER BY ALL",
    )
    assert {t[0] for t in tables} == {"raw", "staging", "marts", "export", "meta"}
    assert [t for t in tables if not t[2]] == []
    columns = rows(
        con,
        "SELECT schema_name, table_name, column_name FROM duckdb_columns() "
        "WHERE database_name = 'warehouse' AND (comment IS NULL OR comment = '') ORDER BY ALL",
    )
    assert columns == []
    con.close()


# The stages in the order a row travels through them; serving reads what publishing wrote.
STAGES = ("ingest", "transform", "export", "publish", "serve")
# Modules every stage may use: they import no stage.
SHARED = ("api", "contract", "db", "errors", "paths", "progress", "remote", "settings")
PACKAGE = Path(__file__).resolve().parent.parent / "pipeline"


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _import_graph() -> dict[str, set[str]]:
    """module -> the pipeline modules it imports (at any depth of its code)."""
    files = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for module, path in files.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        imported: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                imported |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # relative: from the module's package
                    base = ".".join(
                        [*package.split(".")[: len(package.split(".")) - node.level + 1], base]
                    ).strip(".")
                # `from pkg import module` imports the module, and the package it names (its
                # __init__: a cycle when that imports this module; the root's is a docstring)
                if base != "pipeline":
                    imported.add(base)
                imported |= {f"{base}.{a.name}" for a in node.names}
        graph[module] = {m for m in imported if m in files and m != module}
    return graph


def _layer(module: str) -> str:
    """The stage, shared module or top-level role a module belongs to."""
    parts = module.split(".")
    if len(parts) == 1:
        return "package"
    return parts[1]


def test_the_import_graph_has_no_cycle() -> None:
    graph = _import_graph()
    try:
        tuple(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as exc:
        pytest.fail(f"import cycle: {' -> '.join(exc.args[1])}")


def _may_import(layer: str) -> set[str]:
    """The layers a module of `layer` may import (its own included)."""
    if layer in SHARED:
        return set(SHARED)
    if layer in STAGES:
        return {*SHARED, *STAGES[: STAGES.index(layer) + 1]}
    if layer == "conductor":  # every build's conductor runs the stages up to publishing
        return {*SHARED, *STAGES[:-1], layer}
    if layer == "build":  # the one-machine build: the stages, through the conductor
        return {*SHARED, *STAGES[:-1], "conductor", layer}
    if layer == "distributed":  # the same build on a cluster: the stages and the conductor
        return {*SHARED, *STAGES[:-1], "conductor", layer}
    if layer == "tools":
        return {*SHARED, *STAGES, "conductor", "build", "distributed", layer}
    # the command line: everything
    return {*SHARED, *STAGES, "conductor", "build", "distributed", "tools", "cli", layer}


def test_each_stage_imports_only_the_stages_before_it_and_shared_modules() -> None:
    graph = _import_graph()
    problems = [
        f"{module} imports {target}"
        for module, imports in sorted(graph.items())
        for target in sorted(imports)
        if _layer(target) not in _may_import(_layer(module))
    ]
    assert problems == []


def test_serving_does_not_import_the_build() -> None:
    graph = _import_graph()
    reachable, todo = set(), [m for m in graph if _layer(m) == "serve"]
    while todo:
        module = todo.pop()
        for target in graph[module] - reachable:
            reachable.add(target)
            todo.append(target)
    assert not {m for m in reachable if _layer(m) in ("build", "distributed", "cli", "tools")}


def test_modules_stay_small() -> None:
    """A module holds one job: a few hundred lines at most."""
    sizes = {
        p.relative_to(PACKAGE).as_posix(): len(p.read_text().splitlines())
        for p in PACKAGE.rglob("*.py")
    }
    assert {name: n for name, n in sizes.items() if n > 310} == {}


def test_column_docs_are_written_once_in_the_contract(sample_build: Path) -> None:
    """A staging SQL file documents its table; its columns' docs are the contract's, so the raw
    and staging comments of a column cannot drift apart."""
    con = duckdb.connect(str(sample_build / "warehouse.duckdb"), read_only=True)
    comments = {
        (schema, table, column): comment
        for schema, table, column, comment in rows(
            con,
            "SELECT schema_name, table_name, column_name, comment FROM duckdb_columns() "
            "WHERE database_name = 'warehouse' AND schema_name IN ('raw', 'staging')",
        )
    }
    con.close()
    for table in TABLES:
        staged = {c.staged_name for c in table.columns}
        assert not staged & set(SqlFile(f"staging/{table.name}").column_comments), table.name
        for column in table.columns:
            assert comments["staging", table.name, column.staged_name] == column.doc
            assert comments["raw", table.name, column.name] == f"{column.doc} (as written)"


def test_every_included_part_is_a_part_and_every_part_is_included() -> None:
    """`-- @include` names only `PARTS`, CTEs no step runs alone, kept in `sql/api/parts/`.
    Each part is included (`kept_product_entries` by the live server, in place of another)."""
    included = {
        name
        for file in all_sql_files()
        for name in re.findall(r"^-- @include (\S+)$", file.file.read_text(), re.MULTILINE)
    }
    assert included | {KEPT_PRODUCT_ENTRIES.path} == {part.path for part in PARTS}
    for part in PARTS:
        assert part.file.read_text().rstrip().endswith("),"), f"{part.path}: a part ends with ','"
    in_parts_folder = {f.path for f in all_sql_files() if f.path.startswith("api/parts/")}
    assert in_parts_folder == {part.path for part in PARTS}, "parts, and only parts, in api/parts/"


ROOT = PACKAGE.parent
TESTS = ROOT / "tests"


def _imported(path: Path) -> set[str]:
    """The absolute module names a file imports (at any depth of its code)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names |= {node.module, *(f"{node.module}.{a.name}" for a in node.names)}
    return names


def test_the_shipped_package_imports_neither_the_benchmark_nor_the_tests() -> None:
    """`bench/` and `tests/` are not shipped (pyproject.toml's package list)."""
    found = sorted(
        f"{path.relative_to(ROOT)}: {name}"
        for path in PACKAGE.rglob("*.py")
        for name in _imported(path)
        if name.split(".")[0] in ("bench", "tests")
    )
    assert found == []


def test_the_tests_helpers_live_in_tests_support() -> None:
    """A conftest.py holds fixtures only; what tests share beside them is imported from
    `tests.support`, never from a conftest.py or another test module."""
    problems = []
    for path in sorted(TESTS.rglob("*.py")):
        name = path.relative_to(ROOT).as_posix()
        for module in sorted(m for m in _imported(path) if m.startswith("tests.")):
            parts = module.split(".")
            if parts[1] != "support":
                problems.append(f"{name} imports {module}")
        if path.name == "conftest.py":
            tree = ast.parse(path.read_text(), str(path))
            problems += [
                f"{name}: {node.name} is no fixture"
                for node in tree.body
                if isinstance(node, ast.FunctionDef)
                and not any("fixture" in ast.unparse(d) for d in node.decorator_list)
            ]
    assert problems == []
