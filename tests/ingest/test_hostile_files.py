"""Input files built to hurt: a field of any length is a reject read
in bounded memory, fast reader or slow, plain or compressed; a file that cannot be opened or
that changes while it is read stops the build with its name."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline import db, ingest
from pipeline.contract import TABLES_BY_NAME
from pipeline.errors import InputError
from pipeline.ingest.raw import MAX_RECORD_BYTES, TOO_LONG
from tests.support.inputs import ROOT, write_inputs, write_table
from tests.support.runs import rows, run_pipeline

HEADER = "storeKey,skuId,price,quantity,title"
BIG = "x" * (2 * MAX_RECORD_BYTES)  # a 2 MiB field


def _load(input_dir: Path) -> list[tuple[object, ...]]:
    """raw.listings as loaded: source file, row, parse error, storeKey, price, title's length."""
    con = db.connect()
    db.create_schemas(con)
    ingest.ingest_table(con, input_dir, TABLES_BY_NAME["listings"])
    return con.execute(
        "SELECT _source_file, _source_row, _parse_error, storeKey, price, length(title) "
        "FROM raw.listings ORDER BY _source_file, _source_row"
    ).fetchall()


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".gz":
        data = gzip.compress(data, compresslevel=1)
    elif path.suffix == ".zst":
        with pa.output_stream(str(path), compression="zstd") as out:
            out.write(data)
        return
    path.write_bytes(data)


def _csv(*, malformed: bool) -> bytes:
    """Good records around a 2 MiB field and a quoted 1.1 MiB field of short lines; with one
    malformed record (a field too many) when `malformed`, which sends polars' file to the
    record reader."""
    many_lines = "\n".join(["y" * 1000] * 1_100)  # no line is long, the record is
    lines = [
        HEADER,
        "A,1000,1.00,1,a",
        f"B,1000,2.00,1,{BIG}",
        "C,1000,3.00,1,c",
        f'D,1000,4.00,1,"{many_lines}, ""quoted"""',
        "E,1000,5.00,1,e",
        "F,1000,6.00,1,f,extra" if malformed else "F,1000,6.00,1,f",
    ]
    return ("\n".join(lines) + "\n").encode()


@pytest.mark.parametrize("name", ["part.csv", "part.csv.gz", "part.csv.zst"])
@pytest.mark.parametrize("malformed", [False, True], ids=["clean", "malformed"])
def test_a_record_over_1_mib_is_a_reject_in_either_csv_reader(
    tmp_path: Path, name: str, malformed: bool
) -> None:
    """A 2 MiB field in an otherwise clean file was accepted and published (polars' reader had
    no limit), and rejected when one malformed record sent the file to the record reader. Now
    both reject it, and a quoted record of short lines over the limit too, keeping every
    neighbour with its row number."""
    _write(tmp_path / "stores" / "listings" / name, _csv(malformed=malformed))
    source = f"stores/listings/{name}"
    assert _load(tmp_path) == [
        (source, 1, None, "A", "1.00", 1),
        (source, 2, TOO_LONG, None, None, None),
        (source, 3, None, "C", "3.00", 1),
        (source, 4, TOO_LONG, None, None, None),
        (source, 5, None, "E", "5.00", 1),
        (source, 6, "6 fields, the header has 5", None, None, None)
        if malformed
        else (source, 6, None, "F", "6.00", 1),
    ]


@pytest.mark.parametrize("name", ["part.ndjson", "part.ndjson.gz", "part.jsonl.zst"])
def test_an_ndjson_line_over_1_mib_is_a_reject(tmp_path: Path, name: str) -> None:
    rows = [
        {"storeKey": "A", "skuId": 1000, "price": "1.00", "quantity": 1, "title": "a"},
        {"storeKey": "B", "skuId": 1000, "price": "2.00", "quantity": 1, "title": BIG},
        {"storeKey": "C", "skuId": 1000, "price": "3.00", "quantity": 1, "title": "c"},
    ]
    _write(
        tmp_path / "stores" / "listings" / name,
        "".join(json.dumps(r) + "\n" for r in rows).encode(),
    )
    source = f"stores/listings/{name}"
    assert _load(tmp_path) == [
        (source, 1, None, "A", "1.00", 1),
        (source, 2, TOO_LONG, None, None, None),
        (source, 3, None, "C", "3.00", 1),
    ]


def test_a_field_just_under_the_limit_is_kept(tmp_path: Path) -> None:
    """The limit counts a record's bytes as written, its end of line included."""
    fits = "A,1000,1.00,1,"
    title = "é" * ((MAX_RECORD_BYTES - len(fits) - 1) // 2)  # two bytes each
    _write(tmp_path / "stores" / "listings.csv", f"{HEADER}\n{fits}{title}\n".encode())
    assert _load(tmp_path) == [("stores/listings.csv", 1, None, "A", "1.00", len(title))]


_PEAK = """
import gzip, resource, sys
from pathlib import Path
from pipeline import db, ingest
from pipeline.contract import TABLES_BY_NAME
from pipeline.errors import InputError

def load(folder):
    con = db.connect()
    db.create_schemas(con)
    ingest.ingest_table(con, Path(folder), TABLES_BY_NAME["listings"])
    return con.execute("SELECT _source_row, _parse_error IS NULL FROM raw.listings").fetchall()

load(sys.argv[1])  # warm: every import and allocator arena in place
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
rows = load(sys.argv[2])
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(rows, (after - before) // 1024)
"""


@pytest.mark.parametrize("name", ["part.csv.gz", "part.ndjson.gz"])
def test_a_gzip_bomb_is_read_in_bounded_memory(tmp_path: Path, name: str) -> None:
    """A 1.5 MB .csv.gz holding a 1.5 GiB field reached 8.4 GB: polars decompressed the file
    whole. A bomb of 256 MiB (a megabyte on disk) now costs the build less than 160 MiB more
    than a tiny file: it is decompressed a piece at a time and its record read past."""
    small, bomb = (tmp_path / d / "stores" / "listings" for d in ("small", "bomb"))
    good = "A,1000,1.00,1,a\n" if name.startswith("part.csv") else ""
    if name == "part.csv.gz":
        head = f"{HEADER}\n{good}B,1000,2.00,1,".encode()
        tail = b"\nC,1000,3.00,1,c\n"
    else:
        head = b'{"storeKey": "A", "skuId": 1000, "price": "1", "quantity": 1}\n{"title": "'
        tail = b'"}\n{"storeKey": "C", "skuId": 1000, "price": "1", "quantity": 1}\n'
    _write(small / name, head + b"x" + tail)
    (bomb / name).parent.mkdir(parents=True)
    with gzip.open(bomb / name, "wb", compresslevel=1) as out:
        out.write(head)
        for _ in range(256):
            out.write(b"x" * (1 << 20))
        out.write(tail)
    assert (bomb / name).stat().st_size < 1_500_000
    script = textwrap.dedent(_PEAK)
    done = subprocess.run(
        [sys.executable, "-c", script, *(str(p.parent.parent) for p in (small, bomb))],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    rows, grown = done.stdout.strip().splitlines()[-1].rsplit(" ", 1)
    print(f"{name}: {grown.strip()} MiB more than for a tiny file")
    assert rows == "[(1, True), (2, False), (3, True)]"
    assert int(grown) < 160, f"{grown} MiB more than for a tiny file"


def _records(n: int, eol: str = "\n") -> str:
    """A header and `n` records with quoted fields, doubled quotes and line breaks in quotes."""
    lines = [HEADER]
    for i in range(n):
        title = f'"{i} ""foil"",{eol}near mint"' if i % 3 == 0 else f"plain {i}"
        lines.append(f"S{i},1000,{i}.00,1,{title}")
    return eol.join(lines) + eol


@pytest.mark.parametrize("eol", ["\n", "\r\n", "\r"])
@pytest.mark.parametrize("tail", ["", "x,1,2,3,4,5\n"], ids=["clean", "bad-last-record"])
def test_small_batches_read_what_one_batch_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, eol: str, tail: str
) -> None:
    """A file is read a batch at a time, cut at the end of a record, its header given again
    with each batch, and row numbers carried on; a bad record in the last batch sends the
    file to the record reader, and the batches already loaded are forgotten, not doubled."""
    from pipeline.ingest import text

    _write(tmp_path / "stores" / "listings.csv.gz", (_records(40, eol) + tail).encode())
    whole = _load(tmp_path)
    assert len(whole) == 40 + bool(tail)
    assert whole[3] == (
        "stores/listings.csv.gz",
        4,
        None,
        "S3",
        "3.00",
        len(f'3 "foil",{eol}near mint'),
    )
    monkeypatch.setattr(text, "BATCH_BYTES", 64)
    monkeypatch.setattr(text, "BATCH_CELLS", 12)  # two records of five columns
    assert _load(tmp_path) == whole


def test_ndjson_batches_check_columns_over_the_whole_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A required key that only later batches carry is no missing column, and the keys of
    every batch count towards max_columns."""
    from pipeline.ingest import text

    monkeypatch.setattr(text, "BATCH_CELLS", 2)
    path = tmp_path / "stores" / "listings.ndjson"
    _write(path, b'{"storeKey": "A"}\n{"skuId": 1, "price": "1", "quantity": 1}\n')
    assert [r[:4] for r in _load(tmp_path)] == [
        ("stores/listings.ndjson", 1, None, "A"),
        ("stores/listings.ndjson", 2, None, None),
    ]
    con = db.connect()
    db.create_schemas(con)
    with pytest.raises(InputError, match=r"listings.ndjson: header: 4 columns, more than"):
        ingest.ingest_table(con, tmp_path, TABLES_BY_NAME["listings"], max_columns=3)


def test_a_parquet_row_over_1_mib_of_text_is_a_reject(tmp_path: Path) -> None:
    """The same limit for a Parquet row's text (its values as loaded into raw)."""
    path = tmp_path / "stores" / "listings.parquet"
    path.parent.mkdir(parents=True)
    half = "y" * (MAX_RECORD_BYTES // 2)
    columns = {
        "storeKey": ["A", "B", "C"],
        "skuId": [1000, 1000, 1000],
        "price": ["1.00", "2.00", "3.00"],
        "quantity": [1, 1, 1],
        "title": ["a", BIG, half],
        "note": [None, None, half],  # an extra column counts too
    }
    pq.write_table(pa.table(columns), path)
    assert _load(tmp_path) == [
        ("stores/listings.parquet", 1, None, "A", "1.00", 1),
        ("stores/listings.parquet", 2, TOO_LONG, "B", "2.00", len(BIG)),
        ("stores/listings.parquet", 3, TOO_LONG, "C", "3.00", len(half)),
    ]


def test_a_catalog_api_result_over_1_mib_is_a_reject_and_a_huge_page_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A catalog API page is one JSON document, parsed whole: a page over MAX_PAGE_BYTES is
    refused by name before it is read; inside one, a result over the record limit is a reject."""
    from pipeline.ingest import adapters

    path = tmp_path / "catalog" / "categories.json"
    results = [{"categoryId": 1, "name": "Magic"}, {"categoryId": 2, "name": BIG}]
    _write(path, json.dumps({"success": True, "errors": [], "results": results}).encode())
    con = db.connect()
    db.create_schemas(con)
    ingest.ingest_table(con, tmp_path, TABLES_BY_NAME["categories"])
    assert con.execute(
        "SELECT _source_row, _parse_error, categoryId, name FROM raw.categories ORDER BY 1"
    ).fetchall() == [(1, None, "1", "Magic"), (2, TOO_LONG, None, None)]
    monkeypatch.setattr(adapters, "MAX_PAGE_BYTES", 1_000_000)
    with pytest.raises(InputError, match=r"categories.json: a catalog API page of 2,097,\d+ b"):
        ingest.ingest_table(con, tmp_path, TABLES_BY_NAME["categories"])


def _as_another_user() -> list[str]:
    """A command prefix that runs a program without root's right to read any file: `setpriv`
    to nobody when the tests run as root (a chmod means nothing to root), none otherwise."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root, and no setpriv to run the build as another user")
    return [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"]


def _readable_input() -> Path:
    """A valid input directory that another user can read (pytest's tmp_path is root's only)."""
    folder = Path(tempfile.mkdtemp(prefix="ingest-unreadable-", dir="/tmp"))
    write_inputs(folder, listings=[{"storeKey": "A", "skuId": 1000, "price": 1, "quantity": 1}])
    listings = folder / "stores" / "listings"
    listings.mkdir()
    (listings / "a.csv.gz").write_bytes(gzip.compress(b"storeKey,skuId,price,quantity\n"))
    row = {"storeKey": ["B"], "skuId": [1000], "price": ["1"], "quantity": [1]}
    pq.write_table(pa.table(row), listings / "b.parquet")
    (listings / "c.ndjson").write_text(
        '{"storeKey": "C", "skuId": 1000, "price": "1", "quantity": 1}\n', encoding="utf-8"
    )
    (folder / "catalog" / "categories.csv").unlink()
    (folder / "catalog" / "categories.json").write_text(
        json.dumps({"success": True, "errors": [], "results": [{"categoryId": 1, "name": "M"}]})
    )
    for path in [folder, *folder.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return folder


@pytest.mark.parametrize(
    "unreadable",
    [
        "stores/listings.csv",
        "stores/listings/a.csv.gz",
        "stores/listings/b.parquet",
        "stores/listings/c.ndjson",
        "catalog/categories.json",
        "stores/listings",  # a table's folder that cannot be listed
        "catalog",  # a group's folder
    ],
)
def test_an_input_that_cannot_be_read_stops_the_build_with_its_name(unreadable: str) -> None:
    """An input the build's user may not read, run as nobody (to root every
    file is readable). A folder that could not be listed crashed the build with a traceback's
    PermissionError (exit 2); every such input now stops it with one line naming it (exit 1)."""
    prefix = _as_another_user()
    folder = _readable_input()
    try:
        (folder / unreadable).chmod(0o700 if (folder / unreadable).is_dir() else 0o600)
        done = subprocess.run(
            [
                *prefix,
                sys.executable,
                "-m",
                "pipeline",
                "build",
                "--dry-run",
                "--input",
                str(folder),
            ],
            capture_output=True,
            text=True,
            cwd=folder,
            env={**os.environ, "PYTHONPATH": str(ROOT), "HOME": str(folder)},
            timeout=120,
        )
    finally:
        shutil.rmtree(folder)
    assert (done.returncode, done.stderr.strip().splitlines()[-1]) == (
        1,
        f"build failed: {folder / unreadable}: cannot read: Permission denied",
    )


def test_a_file_that_changes_while_it_is_read_stops_the_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An export still being written (appended to between the listing and
    the reads, or while its batches are read) was ingested as whatever it held at each read,
    a mix of two versions. A file whose size, times or inode differ, once read, from when it
    was listed stops the build, naming it."""
    import pipeline.ingest as ingest_module

    folder = tmp_path / "stores" / "listings"
    _write(folder / "a.csv", _records(3).encode())
    _write(folder / "b.csv", _records(3).encode())
    pq.write_table(
        pa.table({"storeKey": ["B"], "skuId": [1000], "price": ["1"], "quantity": [1]}),
        folder / "c.parquet",
    )
    table = TABLES_BY_NAME["listings"]
    con = db.connect()
    db.create_schemas(con)
    ingest.ingest_table(con, tmp_path, table)  # as listed: no complaint

    def read(name: str) -> None:
        files = {f.path.name: f for f in ingest.table_files(tmp_path, table)}
        ingest.ingest_file(con, tmp_path, table, files[name], {})

    # appended between the listing and the reads
    files = {f.path.name: f for f in ingest.table_files(tmp_path, table)}
    with (folder / "a.csv").open("a") as out:
        out.write("Z,1000,9.00,1,late\n")
    with pytest.raises(InputError, match=r"listings/a.csv: changed while the build read it"):
        ingest.ingest_file(con, tmp_path, table, files["a.csv"], {})
    # replaced by another file (a rename over it) of the same size
    files = {f.path.name: f for f in ingest.table_files(tmp_path, table)}
    (folder / "new.tmp").write_bytes((folder / "c.parquet").read_bytes())
    (folder / "new.tmp").rename(folder / "c.parquet")
    with pytest.raises(InputError, match=r"listings/c.parquet: changed while the build read it"):
        ingest.ingest_file(con, tmp_path, table, files["c.parquet"], {})
    # written to while its batches are read: after the first batch was appended
    real = ingest_module.append_frame
    writes = []

    def append_while_written(*args: object) -> int:
        if not writes:
            writes.append(1)
            with (folder / "b.csv").open("a") as out:
                out.write("Y,1000,9.00,1,late\n")
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(ingest_module, "append_frame", append_while_written)
    with pytest.raises(InputError, match=r"listings/b.csv: changed while the build read it"):
        read("b.csv")


GOOD = {"storeKey": "good", "channelId": 0, "price": "1.00", "quantity": 1}


def _valid_listings(n: int) -> list[dict[str, Any]]:
    return [
        {
            **GOOD,
            "storeKey": f"s{i % 3}",
            "skuId": (1000, 1001, 1010)[i % 3] + 0,
            "channelId": i // 3,
            "title": "t",
            "isFeatured": True,
        }
        for i in range(n)
    ]


@st.composite
def damaged_files(draw: st.DrawFn) -> tuple[str, bytes]:
    fmt = draw(st.sampled_from(["csv", "ndjson", "parquet"]))
    listings = _valid_listings(draw(st.integers(1, 12)))
    tmp = Path(os.environ.get("TMPDIR", "/tmp")) / f"damage-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    if fmt == "parquet":
        tmp.mkdir(parents=True)
        path = tmp / "listings.parquet"
        columns = {k: [r.get(k) for r in listings] for k in listings[0]}
        if draw(st.booleans()):  # wrong column types: numbers as text, text as numbers
            columns["price"] = [
                draw(st.sampled_from(["1.00", "abc", "-3", "1e5"])) for _ in listings
            ]
            columns["quantity"] = [str(q) for q in columns["quantity"]]
        pq.write_table(pa.table(columns), path)
    else:
        path = write_table(tmp, "listings", listings, fmt)
    data = bytearray(path.read_bytes())
    shutil.rmtree(tmp, ignore_errors=True)
    for _ in range(draw(st.integers(0, 3))):
        kind = draw(st.sampled_from(["truncate", "quote", "bytes", "huge", "newline", "comma"]))
        at = draw(st.integers(0, max(len(data) - 1, 0)))
        if kind == "truncate":
            data = data[: at + 1]
        elif kind == "quote":
            data[at:at] = b'"'
        elif kind == "bytes":
            data[at:at] = draw(st.sampled_from([b"\xff", b"\xc3\x28", b"\x00", b"\xe2\x82"]))
        elif kind == "huge":
            data[at:at] = b"A" * (1 << 21)
        elif kind == "newline":
            data[at:at] = b"\n"
        else:
            data[at:at] = b","
    return fmt, bytes(data)


@pytest.mark.slow
@settings(
    max_examples=45,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(damaged=damaged_files())
def test_malformed_files_never_crash_and_every_row_is_accounted_for(
    damaged: tuple[str, bytes],
) -> None:
    fmt, data = damaged
    work = Path(os.environ.get("TMPDIR", "/tmp")) / f"malformed-{os.getpid()}"
    shutil.rmtree(work, ignore_errors=True)
    try:
        write_inputs(work)
        (work / "stores" / "listings.csv").unlink()
        (work / "stores" / f"listings.{fmt}").write_bytes(data)
        try:
            con = run_pipeline(work)
        except InputError as exc:
            # Only a file that cannot be read at all stops the build, and it is named.
            assert (
                fmt == "parquet" or "missing required column" in str(exc) or "header" in str(exc)
            ), exc
            assert f"listings.{fmt}" in str(exc)
            return
        raw = rows(con, "SELECT count(*) FROM raw.listings")[0][0]
        accepted = rows(con, "SELECT count(*) FROM staging.listings")[0][0]
        rejected = rows(
            con, "SELECT count(DISTINCT source_row) FROM meta.rejects WHERE table_name = 'listings'"
        )[0][0]
        assert raw == accepted + rejected
        assert rows(con, "SELECT count(*) FROM marts.listing")[0][0] == accepted
        con.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
