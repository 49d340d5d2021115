"""Which entries make an input table, and headers that are wide or odd: every entry is read or
refused by name, never skipped; a header costs the same whatever its width, up to
`max_columns`."""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline import db, ingest
from pipeline.build import dry_run
from pipeline.contract import TABLES_BY_NAME
from pipeline.errors import InputError
from pipeline.settings import load_settings
from tests.support.inputs import write_inputs
from tests.support.runs import rows

HEADER = "storeKey,skuId,price,quantity"


def _zstd(path: Path, data: bytes) -> None:
    with pa.output_stream(str(path), compression="zstd") as out:
        out.write(data)


def _load(input_dir: Path, table: str = "listings", **kwargs: int) -> list[tuple[object, ...]]:
    """raw.<table> as loaded: source file, row, parse error, storeKey, price, extra columns."""
    con = db.connect()
    db.create_schemas(con)
    ingest.ingest_table(con, input_dir, TABLES_BY_NAME[table], **kwargs)
    loaded = con.sql(f"SELECT * FROM raw.{table} ORDER BY _source_file, _source_row")
    names = ("_source_file", "_source_row", "_parse_error", "storeKey", "price", "_extra_columns")
    return [
        tuple(row.get(n) for n in names)
        for row in (dict(zip(loaded.columns, r, strict=True)) for r in loaded.fetchall())
    ]


def _listings(tmp_path: Path) -> Path:
    folder = tmp_path / "stores" / "listings"
    folder.mkdir(parents=True)
    return folder


def test_extensions_in_any_case_and_compressed_csv_and_ndjson_are_read(tmp_path: Path) -> None:
    """1,948 listings vanished in one night: `part-1.CSV` and `part-1.csv.gz` were skipped.
    Row numbers and rejected records work in a compressed file as in a plain one."""
    folder = _listings(tmp_path)
    (folder / "part-1.CSV").write_text(f"{HEADER}\nA,1000,1.00,1\n", encoding="utf-8")
    csv_rows = f"{HEADER}\nB,1000,2.00,1\n\nb,1,2,3,4\nC,1001,3.00,2\n".encode()
    (folder / "part-2.csv.gz").write_bytes(gzip.compress(csv_rows))  # with a bad record
    _zstd(folder / "part-3.Csv.ZST", f"{HEADER}\nD,1000,4.00,1\n".encode())
    line = b'{"storeKey": "%s", "skuId": 1000, "price": "5.00", "quantity": 1}\n'
    (folder / "part-4.ndjson.gz").write_bytes(gzip.compress(line % b"E" + b"\nnot json\n"))
    _zstd(folder / "part-5.JSONL.zst", line % b"F")
    assert [r[:5] for r in _load(tmp_path)] == [
        ("stores/listings/part-1.CSV", 1, None, "A", "1.00"),
        ("stores/listings/part-2.csv.gz", 1, None, "B", "2.00"),
        ("stores/listings/part-2.csv.gz", 3, "5 fields, the header has 4", None, None),
        ("stores/listings/part-2.csv.gz", 4, None, "C", "3.00"),
        ("stores/listings/part-3.Csv.ZST", 1, None, "D", "4.00"),
        ("stores/listings/part-4.ndjson.gz", 1, None, "E", "5.00"),
        (
            "stores/listings/part-4.ndjson.gz",
            3,
            "not valid JSON: invalid literal, expected 'null': line 1 column 1 (char 0)",
            None,
            None,
        ),
        ("stores/listings/part-5.JSONL.zst", 1, None, "F", "5.00"),
    ]


def test_a_compressed_seller_portal_export_names_its_store_without_the_extensions(
    tmp_path: Path,
) -> None:
    folder = _listings(tmp_path)
    export = "TCGplayer Id,Total Quantity,TCG Marketplace Price\n1000,2,$1.50\n"
    (folder / "Shop-A.csv.gz").write_bytes(gzip.compress(export.encode()))
    assert [r[:5] for r in _load(tmp_path)] == [
        ("stores/listings/Shop-A.csv.gz", 1, None, "Shop-A", "1.50")
    ]


def _fifo(path: Path) -> None:
    os.mkfifo(path)  # reading it would wait for a writer: it must never be opened


@pytest.mark.parametrize(
    ("name", "make", "message"),
    [
        ("gone.csv", lambda p: p.symlink_to(p.parent / "nowhere.csv"), "a broken symbolic link"),
        ("pipe.csv", _fifo, r"not a regular file \(a named pipe\)"),
        ("x.csv", lambda p: p.mkdir(), "a folder, not a file"),
        ("part.parquet.gz", lambda p: p.write_bytes(b""), "a compressed Parquet file"),
        ("part.json.gz", lambda p: p.write_bytes(b""), "not an input file"),
        ("notes.txt", lambda p: p.write_text("hi"), r"not an input file \(expected .csv, "),
        ("fake.csv.gz", lambda p: p.write_text(f"{HEADER}\n"), "not gzip data"),
        ("fake.ndjson.zst", lambda p: p.write_text("{}\n"), "not zstd data"),
    ],
)
def test_an_entry_that_is_no_input_file_is_refused_by_name(
    tmp_path: Path, name: str, make: object, message: str
) -> None:
    folder = _listings(tmp_path)
    (folder / "good.csv").write_text(f"{HEADER}\nA,1000,1.00,1\n", encoding="utf-8")
    assert callable(make)
    make(folder / name)
    with pytest.raises(InputError, match=rf"^{tmp_path}/stores/listings/{name}: {message}"):
        _load(tmp_path)


def test_a_file_named_for_a_table_in_another_format_is_refused(tmp_path: Path) -> None:
    write_inputs(tmp_path)
    (tmp_path / "catalog" / "skus.csv").rename(tmp_path / "catalog" / "skus.csv.bz2")
    with pytest.raises(InputError, match=r"catalog/skus.csv.bz2: not an input file"):
        _load(tmp_path, "skus")


def test_a_damaged_compressed_file_names_the_file(tmp_path: Path) -> None:
    folder = _listings(tmp_path)
    data = gzip.compress(f"{HEADER}\n".encode() + b"A,1000,1.00,1\n" * 5000)
    (folder / "cut.ndjson.gz").write_bytes(data[: len(data) // 2])
    with pytest.raises(InputError, match=r"listings/cut.ndjson.gz: cannot read: "):
        _load(tmp_path)


def test_a_symbolic_link_is_read_inside_the_input_and_refused_leading_outside(
    tmp_path: Path,
) -> None:
    """A build reads what its input directory holds: a copy of it builds the same site."""
    input_dir = tmp_path / "in"
    folder = _listings(input_dir)
    (input_dir / "archive").mkdir()
    (input_dir / "archive" / "kept.csv").write_text(f"{HEADER}\nA,1000,1.00,1\n")
    (folder / "kept.csv").symlink_to("../../archive/kept.csv")
    assert [r[:4] for r in _load(input_dir)] == [("stores/listings/kept.csv", 1, None, "A")]
    (tmp_path / "elsewhere.csv").write_text(f"{HEADER}\nB,1000,1.00,1\n")
    (folder / "other.csv").symlink_to(tmp_path / "elsewhere.csv")
    with pytest.raises(
        InputError,
        match=rf"listings/other.csv: leads outside the input directory \(to {tmp_path}/else",
    ):
        _load(input_dir)
    # A linked folder too: each file it holds is named.
    (folder / "other.csv").unlink()
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "s.csv").write_text(f"{HEADER}\nC,1000,1.00,1\n")
    folder.rename(tmp_path / "moved")
    (tmp_path / "moved" / "kept.csv").unlink()
    (input_dir / "stores" / "listings").symlink_to(tmp_path / "shared")
    with pytest.raises(InputError, match=r"listings/s.csv: leads outside the input directory"):
        _load(input_dir)


def test_a_header_naming_a_column_twice_is_refused(tmp_path: Path) -> None:
    """polars renamed the second `price`, and the first won, without a word."""
    folder = _listings(tmp_path)
    (folder / "a.csv").write_text("storeKey,skuId,price,price,quantity\nA,1000,1.00,2.00,1\n")
    with pytest.raises(
        InputError, match=r"listings/a.csv: header: column price appears more than once$"
    ):
        _load(tmp_path)


def test_a_parquet_file_naming_a_column_twice_is_refused(tmp_path: Path) -> None:
    """DuckDB reads the second `price` as `price_1`: the first would win without a word."""
    folder = _listings(tmp_path)
    columns = [pa.array(["A"]), pa.array([1000]), pa.array(["1.00"]), pa.array(["2.00"])]
    table = pa.table([*columns, pa.array([1])], names=[*HEADER.split(",")[:3], "price", "quantity"])
    pq.write_table(table, folder / "a.parquet")
    with pytest.raises(
        InputError, match=r"listings/a.parquet: header: column price appears more than once$"
    ):
        _load(tmp_path)


@pytest.mark.parametrize(
    "name", ["Stores.csv", "excluded-categories.csv", "notes.txt", ".DS_Store"]
)
def test_an_entry_of_a_tables_folder_named_for_no_table_is_refused(
    tmp_path: Path, name: str
) -> None:
    """`stores/Stores.csv` was skipped, and the optional table with it."""
    write_inputs(tmp_path)
    (tmp_path / "stores" / name).write_text("storeKey\nA\n")
    with pytest.raises(InputError, match=rf"stores/{name}: not a file or folder of any table"):
        dry_run(load_settings(None, input=tmp_path))


def test_a_header_with_an_empty_name_is_refused_with_the_file(tmp_path: Path) -> None:
    """A trailing comma: DuckDB said "zero-length delimited identifier", naming no file."""
    folder = _listings(tmp_path)
    (folder / "a.csv").write_text(f"{HEADER}\nA,1000,1.00,1\n")
    (folder / "b.csv").write_text(f"{HEADER},\nB,1000,1.00,1,\n")
    with pytest.raises(
        InputError, match=r"listings/b.csv: header: column 5 has no name \(a trailing comma\?\)$"
    ):
        _load(tmp_path)


def test_old_mac_line_endings_read_record_by_record(tmp_path: Path) -> None:
    """CR alone ends a record (old Mac exports). Read as one line, the file was one header of
    every field in it: minutes and gigabytes for a real export."""
    folder = _listings(tmp_path)
    (folder / "a.csv").write_bytes(
        f'{HEADER},note\rA,1000,1.00,1,"two\rlines"\r\rB,1001,2.00,3,\r'.encode()
    )
    (folder / "b.csv").write_bytes(f"{HEADER}\rC,1000,3.00,1\rc,1,2,3,4\r".encode())
    assert _load(tmp_path) == [
        ("stores/listings/a.csv", 1, None, "A", "1.00", '{"note":"two\\rlines"}'),
        ("stores/listings/a.csv", 3, None, "B", "2.00", '{"note":null}'),
        ("stores/listings/b.csv", 1, None, "C", "3.00", None),
        ("stores/listings/b.csv", 2, "5 fields, the header has 4", None, None, None),
    ]


def test_thousands_of_extra_columns_cost_one_column(tmp_path: Path) -> None:
    """Columns were added and commented one statement each: 2,000 extra columns ran out of
    memory. They are kept in one JSON object, `_extra_columns`, in the order of the header."""
    folder = _listings(tmp_path)
    extra = [f"x{i}" for i in range(2000)]
    (folder / "a.csv").write_text(
        ",".join([HEADER, *extra]) + "\n" + ",".join(["A,1000,1.00,1", *extra]) + "\n"
    )
    (folder / "b.ndjson").write_text('{"storeKey":"B","skuId":1,"price":1,"quantity":1,"y":2}\n')
    con = db.connect()
    db.create_schemas(con)
    ingest.ingest_table(con, tmp_path, TABLES_BY_NAME["listings"], max_columns=2004)
    assert rows(con, "SELECT storeKey, json_keys(_extra_columns) FROM raw.listings") == [
        ("A", extra),
        ("B", ["y"]),
    ]
    assert rows(con, "SELECT _extra_columns ->> 'x1999', _extra_columns ->> 'y' FROM raw.listings")[
        1
    ] == (None, "2")
    assert len(con.table("raw.listings").columns) == 3 + len(TABLES_BY_NAME["listings"].columns) + 1


def test_a_header_over_max_columns_names_the_file_and_both_numbers(tmp_path: Path) -> None:
    """100,000 columns ran past 300 s; a file with more than `max_columns` stops at once."""
    folder = _listings(tmp_path)
    header = ",".join([HEADER, *(f"x{i}" for i in range(997))])  # 1,001 columns
    (folder / "a.csv").write_text(header + "\n")
    with pytest.raises(
        InputError,
        match=r"listings/a.csv: header: 1,001 columns, more than build.max_columns \(1,000\)$",
    ):
        _load(tmp_path)


@pytest.mark.parametrize("fmt", ["ndjson", "parquet"])
def test_max_columns_counts_ndjson_keys_and_parquet_columns(tmp_path: Path, fmt: str) -> None:
    folder = _listings(tmp_path)
    if fmt == "ndjson":
        (folder / "a.ndjson").write_text(
            '{"storeKey":"A","skuId":1,"price":1,"quantity":1,"x":1}\n'
            '{"storeKey":"A","skuId":1,"price":1,"quantity":1,"y":1,"z":1}\n'
        )
    else:
        pq.write_table(
            pa.table({c: ["1"] for c in [*HEADER.split(","), "x", "y", "z"]}), folder / "a.parquet"
        )
    with pytest.raises(
        InputError, match=rf"a.{fmt}: header: 7 columns, more than build.max_columns \(6\)"
    ):
        _load(tmp_path, max_columns=6)


def test_the_build_reads_max_columns_from_its_settings(tmp_path: Path) -> None:
    write_inputs(tmp_path)
    settings = load_settings(
        None, input=tmp_path, output=tmp_path / "out", build={"max_columns": 4}
    )
    with pytest.raises(InputError, match=r"catalog/products.csv: header: 6 columns, .* \(4\)"):
        dry_run(settings)


def test_a_byte_order_mark_is_dropped_from_ndjson_as_from_csv(tmp_path: Path) -> None:
    """An NDJSON file written with a UTF-8 BOM lost its first record ("BOM is not supported")
    while a CSV dropped the mark: one rule, plain or compressed."""
    folder = _listings(tmp_path)
    bom = b"\xef\xbb\xbf"
    line = b'{"storeKey": "%s", "skuId": 1000, "price": "1.00", "quantity": 1}\n'
    (folder / "a.ndjson").write_bytes(bom + line % b"A" + line % b"B")
    (folder / "b.ndjson.gz").write_bytes(gzip.compress(bom + line % b"C"))
    (folder / "c.csv").write_bytes(bom + f"{HEADER}\nD,1000,1.00,1\n".encode())
    (folder / "d.csv").write_bytes(bom + f"{HEADER}\nE,1000,1.00,1\ne,1,2,3,4\n".encode())
    assert [r[:5] for r in _load(tmp_path)] == [
        ("stores/listings/a.ndjson", 1, None, "A", "1.00"),
        ("stores/listings/a.ndjson", 2, None, "B", "1.00"),
        ("stores/listings/b.ndjson.gz", 1, None, "C", "1.00"),
        ("stores/listings/c.csv", 1, None, "D", "1.00"),
        ("stores/listings/d.csv", 1, None, "E", "1.00"),
        ("stores/listings/d.csv", 2, "5 fields, the header has 4", None, None),
    ]
