"""An optional column never costs its row (docs/contract.md §2): in every optional column of
every table, as CSV, NDJSON, Parquet and a catalog API page dump, a null, a missing or null nested key, malformed JSON
and a word where a value of the column's type belongs. The cases come from the contract's
column list, so a new optional column is covered as it is declared."""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline import db, ingest, transform
from pipeline.api.catalog_models import ExtendedData, PresaleInfo
from pipeline.build import build
from pipeline.contract import NESTED_KINDS, TABLES, Column, Kind, Table
from pipeline.errors import BuildError
from pipeline.paths import REPORT_JSON, WAREHOUSE
from pipeline.settings import load_settings
from pipeline.transform.audit import audit
from tests.support.inputs import write_inputs
from tests.support.runs import run_pipeline

# A row's required values, the row's id `n` its key (references: the base catalog's).
REQUIRED: dict[str, Any] = {
    "categories": lambda n: {"categoryId": n, "name": f"Category {n}"},
    "groups": lambda n: {"groupId": n, "categoryId": 1, "name": f"Group {n}"},
    "products": lambda n: {
        "productId": n,
        "categoryId": 1,
        "groupId": 10,
        "name": f"Product {n}",
        "number": "7",  # the derived extendedData entry of a product without a readable one
    },
    "conditions": lambda n: {"conditionId": n, "name": f"Condition {n}"},
    "languages": lambda n: {"languageId": n, "name": f"Language {n}"},
    "printings": lambda n: {"printingId": n, "name": f"Printing {n}"},
    "stores": lambda n: {"storeKey": f"s{n}"},
    "listings": lambda n: {
        "storeKey": f"s{n}",
        "skuId": 1000,
        "price": "1.00",
        "quantity": 1,
        "isCustom": True,  # a custom listing shows its custom columns
        "storePriceCustomId": n,
    },
}
WORDS = {
    Kind.INT32: "many",
    Kind.INT64: "many",
    Kind.MONEY: "cheap",
    Kind.BOOL: "maybe",
    Kind.TIMESTAMP: "soon",
}
MALFORMED = '[{"name": "Number", '
FORMATS = ("a.csv", "b.ndjson", "c.parquet", "d.json")
API_PAGES = ("categories", "groups", "products")  # the tables a catalog API page dump holds


def formats(table: Table) -> tuple[str, ...]:
    """The files of a table's cases: CSV, NDJSON, Parquet, and a catalog API page dump."""
    return FORMATS if table.name in API_PAGES else FORMATS[:-1]


@dataclass(frozen=True)
class Case:
    column: Column
    name: str
    value: Any  # as NDJSON holds it; CSV and Parquet hold its text
    staged: Any  # the value staging.<table> holds
    unreadable: bool  # a warning, and the value is absent


def _absent(column: Column) -> Any:
    return False if column.name == "foil" else None


def _nested_nulls(column: Column) -> tuple[Any, Any]:
    """A record whose first key is null and whose others are missing: as written, as staged."""
    written = {column.fields[0].name: None}
    staged = {f.staged_name: None for f in column.fields}
    return (written, staged) if column.kind is Kind.RECORD else ([written], [staged])


def cases(column: Column) -> list[Case]:
    found = [Case(column, "null", None, _absent(column), False)]
    if column.kind in (Kind.RECORD, Kind.RECORD_LIST):
        found.append(Case(column, "nested null", *_nested_nulls(column), False))
    if column.kind in NESTED_KINDS:
        found.append(Case(column, "malformed JSON", MALFORMED, _absent(column), True))
    if column.kind in WORDS:
        found.append(Case(column, "a word", WORDS[column.kind], _absent(column), True))
    if column.kind in (Kind.INT32, Kind.INT64):
        found.append(Case(column, "3.0", 3.0, 3, False))  # read without loss
    return found


def table_cases(table: Table) -> list[Case]:
    return [case for c in table.columns if not c.required for case in cases(c)]


TESTED = [t for t in TABLES if table_cases(t)]


def _row(table: Table, case: Case, n: int) -> dict[str, Any]:
    row = REQUIRED[table.name](n)
    if case.column.name == "storePriceCustomId":
        row["isCustom"] = False  # a custom listing without it is a reject: a generic one
    row[case.column.name] = case.value
    return row


def _text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    return json.dumps(value) if isinstance(value, dict | list) else str(value)


def _write(folder: Path, name: str, rows: list[dict[str, Any]]) -> None:
    columns = list(dict.fromkeys(k for r in rows for k in r))
    path = folder / name
    if name.endswith(".ndjson"):
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    elif name.endswith(".json"):
        page = {"success": True, "errors": [], "results": rows}
        path.write_text(json.dumps(page), encoding="utf-8")
    elif name.endswith(".csv"):
        with path.open("w", newline="", encoding="utf-8") as fh:
            writer = csv.writer(fh, lineterminator="\n")
            writer.writerow(columns)
            writer.writerows([[_text(r.get(c)) or "" for c in columns] for r in rows])
    else:
        arrays = {c: pa.array([_text(r.get(c)) for r in rows], pa.string()) for c in columns}
        pq.write_table(pa.table(arrays), path)


def _input(root: Path) -> tuple[Path, dict[tuple[str, str, int], Case]]:
    """The base catalog and, per table, a folder of the three files of every case; the cases
    by (table, file, row)."""
    input_dir = write_inputs(root)
    placed = {}
    for table in TESTED:
        folder = input_dir / table.group / table.name
        folder.mkdir()
        for name in formats(table):
            rows = []
            for i, case in enumerate(table_cases(table), start=1):
                rows.append(_row(table, case, _id(name, i)))
                placed[(table.name, f"{table.group}/{table.name}/{name}", i)] = case
            _write(folder, name, rows)
    return input_dir, placed


def _id(file: str, row: int) -> int:
    """The key of a case's row: its file's place in FORMATS, and its row."""
    return 5000 + 1000 * FORMATS.index(file.rsplit("/", 1)[-1]) + row


def _published(con: duckdb.DuckDBPyConnection, product_id: int) -> dict[str, Any]:
    [(head, extended)] = con.execute(
        "SELECT head_json, extended_json FROM export.catalog_product WHERE product_id = ?",
        [product_id],
    ).fetchall()
    published: dict[str, Any] = orjson.loads(head + extended + "}")
    return published


def test_every_optional_column_keeps_its_row_in_every_format(tmp_path: Path) -> None:
    """No row is rejected; a null or a missing nested key is published as null with no
    warning; a value unreadable as its type is published absent (null, false for foil, [] for
    additionalImageUrls, the derived entries for extendedData) and counted per file, column and
    reason."""
    input_dir, placed = _input(tmp_path / "in")
    output = tmp_path / "out"
    # Each column is unreadable in a few rows of its table: under this share.
    settings = load_settings(None, input=input_dir, output=output, build={"max_reject_share": 0.25})
    result = build(settings)
    con = duckdb.connect(str((output / WAREHOUSE).resolve()), read_only=True)
    try:
        assert con.execute("SELECT * FROM meta.rejects").fetchall() == []
        staged = {}
        for table in TESTED:
            for file, row, *values in con.execute(
                f"SELECT source_file, source_row, {', '.join(c.staged_name for c in table.columns)}"
                f" FROM staging.{table.name}"
            ).fetchall():
                staged[(table.name, file, row)] = dict(zip(table.columns, values, strict=True))
        assert placed.keys() <= staged.keys(), "every row is staged"
        found = {key: staged[key][case.column] for key, case in placed.items()}
        assert found == {key: case.staged for key, case in placed.items()}

        warned = con.execute(
            "SELECT table_name, source_file, source_row, column_name, check_name FROM meta.warnings"
        ).fetchall()
        unreadable = {k for k, case in placed.items() if case.unreadable}
        assert sorted(warned) == sorted(
            (*key, placed[key].column.name, "contract") for key in unreadable
        )

        # The absent-value rules, as published: a catalog product's JSON.
        published = {
            (file, case.column.name, case.name): _published(con, _id(file, row))[case.column.name]
            for (table, file, row), case in placed.items()
            if table == "products" and case.column.name in ("presaleInfo", "extendedData")
        }
    finally:
        con.close()
    derived = [{"name": "Number", "displayName": "Card Number", "value": "7"}]
    expected = {
        ("presaleInfo", "null"): None,
        ("presaleInfo", "nested null"): {"isPresale": None, "releasedOn": None, "note": None},
        ("presaleInfo", "malformed JSON"): None,
        ("extendedData", "null"): derived,
        ("extendedData", "nested null"): [{"name": None, "displayName": None, "value": None}],
        ("extendedData", "malformed JSON"): derived,
    }
    # A catalog API page derives a product's Number from its extendedData: none here.
    api = {**expected, ("extendedData", "null"): [], ("extendedData", "malformed JSON"): []}
    assert published == {
        (f"catalog/products/{name}", *key): value
        for name in FORMATS
        for key, value in (api if name.endswith(".json") else expected).items()
    }
    # The response models (and the OpenAPI document made from them) allow what is published.
    for (_, column, _), value in published.items():
        if column == "presaleInfo" and value is not None:
            PresaleInfo.model_validate(value)
        elif column == "extendedData":
            [ExtendedData.model_validate(entry) for entry in value]
    for (table, file, row), case in placed.items():
        if table == "listings" and case.column.name == "additionalImageUrls":
            store = f"s{_id(file, row)}"
            page = output / "site" / "v1.39.0" / "stores" / store / "inventory" / "products"
            [product] = orjson.loads((page / "index.json").read_bytes())["results"]
            assert [s["additionalImageUrls"] for s in product["skus"]] == [[]], case.name

    # The report counts each unreadable value per file, column and reason, its row an example.
    report = orjson.loads((output / REPORT_JSON).read_bytes())
    counted = {(w["table"], w["file"], w["column"]): w for w in report["warnings"]}
    assert counted.keys() == {(k[0], k[1], placed[k].column.name) for k in unreadable}
    for table, file, row in unreadable:
        entry = counted[(table, file, placed[(table, file, row)].column.name)]
        assert (entry["rows"], entry["first_rows"]) == (1, [row])
    reasons = {(w["table"], w["column"], w["reason"]) for w in report["warnings"]}
    assert len(reasons) == len({(w["table"], w["column"]) for w in report["warnings"]})
    assert result.report.tables["products"].rejected == 0
    html = (output / "build_report.html").read_text(encoding="utf-8")
    assert "<td>catalog/products/a.csv</td><td>imageCount</td>" in html


def test_a_column_unreadable_in_more_than_the_reject_share_stops_the_build(
    tmp_path: Path,
) -> None:
    """As rejects do: one of the three products' imageCount is a word, a third of the table."""
    products = [
        {"productId": 100, "categoryId": 1, "groupId": 10, "name": "Sol Ring", "imageCount": 1},
        {"productId": 101, "categoryId": 1, "groupId": 10, "name": "Lotus", "imageCount": "two"},
        {"productId": 102, "categoryId": 1, "groupId": 10, "name": "Mox", "imageCount": 3},
    ]
    input_dir = write_inputs(tmp_path / "in", products=products)
    con = db.connect()
    try:
        db.create_schemas(con)
        ingested = ingest.ingest_all(con, input_dir)
        transform.run_steps(con)
        settings = load_settings(None, input=input_dir, output=tmp_path / "out")
        with pytest.raises(BuildError) as stopped:
            audit(con, settings, ingested)
        assert str(stopped.value) == (
            "catalog/products: imageCount cannot be read in 1 of 3 rows (33.3%, above "
            "build.max_reject_share 5.0%); the rows are in meta.warnings"
        )
        # At a share above it, the build goes on.
        audit(con, load_settings(None, build={"max_reject_share": 0.34}), ingested)
    finally:
        con.close()


def test_typed_parquet_an_integer_out_of_range_and_a_struct_with_a_null_key(
    tmp_path: Path,
) -> None:
    """A Parquet products table keeps its types: an int64 imageCount past 32 bits is read as
    absent with a warning; a presaleInfo struct whose isPresale is null is a value."""
    input_dir = write_inputs(tmp_path)
    (input_dir / "catalog" / "products.csv").unlink()
    presale = pa.struct(
        [("isPresale", pa.bool_()), ("releasedOn", pa.timestamp("ms")), ("note", pa.string())]
    )
    products = {
        "productId": pa.array([100, 101], pa.int64()),
        "categoryId": pa.array([1, 1], pa.int32()),
        "groupId": pa.array([10, 10], pa.int64()),
        "name": ["Sol Ring", "Black Lotus"],
        "imageCount": pa.array([2**40, 3], pa.int64()),
        "presaleInfo": pa.array([{"isPresale": None, "note": "soon"}, None], presale),
    }
    pq.write_table(pa.table(products), input_dir / "catalog" / "products.parquet")
    con = run_pipeline(input_dir)
    try:
        assert con.execute("SELECT * FROM meta.rejects").fetchall() == []
        assert con.execute(
            "SELECT source_row, column_name, value, reason FROM meta.warnings"
        ).fetchall() == [(1, "imageCount", str(2**40), "not a 32-bit integer")]
        assert con.execute(
            "SELECT product_id, image_count, presale_info FROM staging.products ORDER BY 1"
        ).fetchall() == [
            (100, None, {"is_presale": None, "released_on": None, "note": "soon"}),
            (101, 3, None),
        ]
    finally:
        con.close()
