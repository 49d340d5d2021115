"""Ingest: every format into raw.<table> as loaded (text, or Parquet's own types where they hold
the values), with source file and row number."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline import db, ingest
from pipeline.contract import TABLES_BY_NAME
from pipeline.errors import InputError
from tests.support.inputs import write_inputs, write_table
from tests.support.runs import rows, run_pipeline

LISTINGS = TABLES_BY_NAME["listings"]


def _load(input_dir: Path, table: str = "listings") -> list[tuple[object, ...]]:
    con = db.connect()
    db.create_schemas(con)
    ingest.ingest_table(con, input_dir, TABLES_BY_NAME[table])
    return rows(con, f"SELECT * FROM raw.{table} ORDER BY _source_file, _source_row")


def test_csv_ndjson_and_parquet_files_of_one_table_load_alike(tmp_path: Path) -> None:
    folder = tmp_path / "stores" / "listings"
    folder.mkdir(parents=True)
    (folder / "a.csv").write_text(
        "storeKey,skuId,price,quantity,isCustom,additionalImageUrls,extra\n"
        'S1,1000,"1.50",2,,,x\n'
        's2,1001,0.25,1,TRUE,"[""u1""]",\n',
        encoding="utf-8",
    )
    (folder / "b.ndjson").write_text(
        '{"storeKey": "S3", "skuId": 1010, "price": 12.3, "quantity": 4, "isFeatured": null,'
        ' "additionalImageUrls": ["a", "b"]}\n'
        "\n"
        "not json\n",
        encoding="utf-8",
    )
    pq.write_table(
        pa.table(
            {
                "storeKey": ["S4"],
                "skuId": [1000],
                "price": pa.array([5], pa.decimal128(8, 2)),
                "quantity": [0],
                "isCustom": [False],
            }
        ),
        folder / "c.parquet",
    )
    loaded = _load(tmp_path)
    # _source_file, _source_row, _parse_error, then the declared columns, then extras.
    declared = [
        "storeKey",
        "channelId",
        "skuId",
        "price",
        "quantity",
        "isFeatured",
        "isCustom",
        "storePriceCustomId",
        "title",
        "description",
        "mainImageUrl",
        "additionalImageUrls",
    ]
    assert LISTINGS.column_names == declared

    def pick(row: tuple[object, ...]) -> tuple[object, ...]:
        return (*row[:3], row[3], row[5], row[6], row[7], row[9], row[14])

    assert [pick(r) for r in loaded] == [
        ("stores/listings/a.csv", 1, None, "S1", "1000", "1.50", "2", None, None),
        ("stores/listings/a.csv", 2, None, "s2", "1001", "0.25", "1", "TRUE", '["u1"]'),
        ("stores/listings/b.ndjson", 1, None, "S3", "1010", "12.3", "4", None, '["a","b"]'),
        (
            "stores/listings/b.ndjson",
            3,
            "not valid JSON: invalid literal, expected 'null': line 1 column 1 (char 0)",
            None,
            None,
            None,
            None,
            None,
            None,
        ),
        ("stores/listings/c.parquet", 1, None, "S4", "1000", "5.00", "0", "false", None),
    ]
    # The extra column is kept, after the declared ones, in one JSON object of every column
    # not in the contract.
    assert [r[15] for r in loaded] == ['{"extra":"x"}', '{"extra":null}', None, None, None]


def test_a_missing_required_column_stops_with_file_and_column(tmp_path: Path) -> None:
    write_table(tmp_path, "listings", [{"storeKey": "s", "skuId": 1, "price": "1"}])
    with pytest.raises(InputError, match=r"stores/listings.csv: missing required column quantity"):
        _load(tmp_path)


def test_a_missing_required_table_stops_and_an_optional_one_is_empty(tmp_path: Path) -> None:
    write_inputs(tmp_path)
    (tmp_path / "catalog" / "skus.csv").unlink()
    con = db.connect()
    db.create_schemas(con)
    with pytest.raises(InputError, match=r"catalog/skus: missing required input"):
        ingest.ingest_all(con, tmp_path)
    assert _load(tmp_path, "stores") == []


def test_malformed_csv_records_become_rows_with_a_parse_error(tmp_path: Path) -> None:
    path = tmp_path / "stores" / "listings.csv"
    path.parent.mkdir(parents=True)
    path.write_bytes(
        b"storeKey,skuId,price,quantity\n"
        b"\xff\xfe,1,1,1\n"  # not UTF-8
        b"ok,1000,1.00,1\n"
        b"a,1,2,3,4\n"  # a field too many
        b"\n"  # a blank line is no record, but it uses up its number
        b'short,1001,"2.50"\n'  # the missing trailing cell reads as empty
        b'quo"ted,1001,0.25,1\n'  # a stray quote inside a field is kept
    )
    assert [(r[1], r[2], r[3], r[5], r[6], r[7]) for r in _load(tmp_path)] == [
        (1, "not valid UTF-8", None, None, None, None),
        (2, None, "ok", "1000", "1.00", "1"),
        (3, "5 fields, the header has 4", None, None, None, None),
        (5, None, "short", "1001", "2.50", None),
        (6, None, 'quo"ted', "1001", "0.25", "1"),
    ]


def test_blank_lines_are_no_records_in_either_reader(tmp_path: Path) -> None:
    path = tmp_path / "stores" / "listings.csv"
    path.parent.mkdir(parents=True)
    path.write_text("storeKey,skuId,price,quantity\na,1,1,1\n\nb,2,2,2\n\n", encoding="utf-8")
    fast = [(r[1], r[3]) for r in _load(tmp_path)]
    path.write_text(
        path.read_text() + "c,3,3,3,extra\n", encoding="utf-8"
    )  # forces the slow reader
    slow = [(r[1], r[3]) for r in _load(tmp_path)]
    assert fast == [(1, "a"), (3, "b")]
    assert slow == [(1, "a"), (3, "b"), (5, None)]


def test_ndjson_nested_values_and_empty_files(tmp_path: Path) -> None:
    folder = tmp_path / "stores" / "listings"
    folder.mkdir(parents=True)
    (folder / "empty.ndjson").write_text("", encoding="utf-8")
    (folder / "rows.ndjson").write_text(
        '{"storeKey": "s", "skuId": 1, "price": 1, "quantity": 1, "title": {"x": 1}}\n'
        '{"storeKey": "s", "skuId": 2, "price": 1, "quantity": 1, "additionalImageUrls": ["a", 1]}\n'
        '{"storeKey": "s", "skuId": 3, "price": {"x": 1}, "quantity": 1}\n',
        encoding="utf-8",
    )
    # An object in an optional column of one value is its JSON text; in a required one, the
    # row cannot be parsed.
    assert [(r[0], r[1], r[2], r[11], r[14]) for r in _load(tmp_path)] == [
        ("stores/listings/rows.ndjson", 1, None, '{"x":1}', None),
        ("stores/listings/rows.ndjson", 2, None, None, '["a",1]'),
        (
            "stores/listings/rows.ndjson",
            3,
            "price: a JSON object or array, not a value",
            None,
            None,
        ),
    ]


def test_an_unreadable_parquet_file_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "stores" / "listings.parquet"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"PAR1 this is not a parquet file")
    with pytest.raises(InputError, match=r"listings.parquet: cannot read Parquet"):
        _load(tmp_path)


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_a_column_name_with_a_nul_character_names_the_file(tmp_path: Path, fmt: str) -> None:
    path = tmp_path / "stores" / f"listings.{fmt}"
    path.parent.mkdir(parents=True)
    header = ["storeKey", "skuId", "price", "quantity", "no\x00te"]
    values = ["s1", "1000", "1.00", "1", "x"]
    if fmt == "csv":
        path.write_bytes((",".join(header) + "\n" + ",".join(values) + "\n").encode())
    else:
        pq.write_table(pa.table({h: [v] for h, v in zip(header, values, strict=True)}), path)
    with pytest.raises(InputError, match=rf"listings.{fmt}: header: .* NUL character"):
        _load(tmp_path)


def test_parquet_columns_keep_a_type_that_holds_them_and_the_rest_is_text(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "stores" / "listings"
    folder.mkdir(parents=True)
    common = {
        "storeKey": ["s1"],
        "skuId": pa.array([1000], pa.int64()),
        "quantity": pa.array([1], pa.int16()),
        "isCustom": [False],
    }
    pq.write_table(
        pa.table({**common, "price": pa.array([Decimal("1.50")], pa.decimal128(9, 2))}),
        folder / "a.parquet",
    )
    # A binary float is no exact price: the price column is text, parsed as CSV text is.
    pq.write_table(pa.table({**common, "price": [2.25], "extra": [7]}), folder / "b.parquet")
    con = db.connect()
    db.create_schemas(con)
    ingest.ingest_table(con, tmp_path, LISTINGS)
    types = dict(
        rows(
            con,
            "SELECT column_name, data_type FROM duckdb_columns() "
            "WHERE schema_name = 'raw' AND table_name = 'listings'",
        )
    )
    assert {c: types[c] for c in ("storeKey", "skuId", "quantity", "isCustom", "price")} == {
        "storeKey": "VARCHAR",
        "skuId": "BIGINT",
        "quantity": "SMALLINT",
        "isCustom": "BOOLEAN",
        "price": "VARCHAR",
    }
    assert (types["channelId"], types["_extra_columns"]) == ("VARCHAR", "VARCHAR")
    assert rows(
        con, "SELECT price, channelId, _extra_columns ->> 'extra' FROM raw.listings ORDER BY 1"
    ) == [("1.50", None, None), ("2.25", None, "7")]


@pytest.mark.parametrize("name", ["_source_file", "_source_row", "_parse_error"])
def test_a_reserved_column_name_stops_without_reading_the_file_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """The header is refused by the fast reader itself: the file is not read again record by
    record (which costs minutes on a large file) before the error shows."""
    from pipeline.ingest import text

    def read_again(path: Path) -> None:
        raise AssertionError(f"{path} was read again record by record")

    monkeypatch.setattr(text, "_read_csv_by_record", read_again)
    write_inputs(tmp_path, listings=[])
    (tmp_path / "stores" / "listings.csv").write_text(
        f"storeKey,skuId,price,quantity,{name}\ns,1000,1.00,1,7\n", encoding="utf-8"
    )
    with pytest.raises(InputError, match=rf"listings\.csv: column name {name} is reserved"):
        _load(tmp_path)


def test_a_parquet_path_with_quotes_and_accents_loads(tmp_path: Path) -> None:
    """Paths travel as bind parameters, not quoted into the SQL by hand."""
    write_inputs(tmp_path, listings=[])
    folder = tmp_path / "stores" / "listings"
    folder.mkdir()
    (tmp_path / "stores" / "listings.csv").unlink()
    table = pa.table(
        {"storeKey": ["s"], "skuId": [1000], "price": ["1.50"], "quantity": [2]},
    )
    pq.write_table(table, folder / "O'Brien's \"shop\" ü.parquet")
    loaded = _load(tmp_path)
    assert [(r[0], r[1], r[3], r[5], r[6]) for r in loaded] == [
        ("stores/listings/O'Brien's \"shop\" ü.parquet", 1, "s", 1000, "1.50")
    ]


def test_a_value_nested_too_deeply_is_a_reject_not_a_crash(tmp_path: Path) -> None:
    """orjson writes at most 254 levels: a list nested 300 deep becomes its row's parse error."""
    write_inputs(tmp_path, listings=[])
    (tmp_path / "stores" / "listings.csv").unlink()
    deep = "[" * 300 + '"x"' + "]" * 300
    (tmp_path / "stores" / "listings.ndjson").write_text(
        '{"storeKey":"s","skuId":1000,"price":"1.00","quantity":1}\n'
        '{"storeKey":"s","skuId":1001,"price":"1.00","quantity":1,"isCustom":true,'
        f'"storePriceCustomId":5,"additionalImageUrls":{deep}}}\n',
        encoding="utf-8",
    )
    loaded = _load(tmp_path)
    assert [(r[0], r[1], r[2], r[3]) for r in loaded] == [
        ("stores/listings.ndjson", 1, None, "s"),
        (
            "stores/listings.ndjson",
            2,
            "additionalImageUrls: nested too deeply (Recursion limit reached)",
            None,
        ),
    ]
    (tmp_path / "catalog" / "products.csv").unlink()
    (tmp_path / "catalog" / "products.json").write_text(
        '{"success":true,"errors":[],"results":['
        '{"productId":7,"categoryId":1,"groupId":10,"name":"x"},'
        f'{{"productId":8,"categoryId":1,"groupId":10,"name":"y","skus":{deep}}}]}}',
        encoding="utf-8",
    )
    products = _load(tmp_path, "products")
    assert [(r[1], r[2], r[3]) for r in products] == [
        (1, None, "7"),
        (2, "skus: nested too deeply (Recursion limit reached)", None),
    ]


def test_reserved_column_names_and_empty_records(tmp_path: Path) -> None:
    input_dir = write_inputs(tmp_path / "a")
    (input_dir / "stores" / "listings.csv").write_text(
        "storeKey,skuId,price,quantity,_source_file\ns1,1000,1,1,x\n", encoding="utf-8"
    )
    with pytest.raises(InputError, match="column name _source_file is reserved"):
        run_pipeline(input_dir)
    (input_dir / "stores" / "listings.csv").write_text(
        "storeKey,skuId,price,quantity\ns1,1000,1,1\n,,,\n\ns2,1000,1,1\n", encoding="utf-8"
    )
    con = run_pipeline(input_dir)
    assert rows(con, "SELECT DISTINCT source_row FROM meta.rejects ORDER BY 1") == [(2,)]  # `,,,`
    assert rows(con, "SELECT source_row FROM staging.listings ORDER BY 1") == [(1,), (4,)]
    con.close()
