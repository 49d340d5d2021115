"""An input in an object store (`--input s3://...`), on the real test S3 server: the same
warehouse and site as the same files in a directory; every object read or refused by its URL;
an object replaced after the listing stops the build."""

from __future__ import annotations

import urllib.request
import zlib
from pathlib import Path

import duckdb
import obstore as obs
import orjson
import polars as pl
import pytest

from pipeline import db, ingest, transform
from pipeline.contract import TABLES, TABLES_BY_NAME
from pipeline.errors import InputError
from pipeline.ingest import ingest_object, raw_types, table_files
from pipeline.ingest import remote as remote_input
from pipeline.ingest.raw import create_raw_table
from pipeline.ingest.remote import list_input
from pipeline.paths import MANIFEST, MANIFEST_PARQUET, REPORT_JSON, WAREHOUSE, WORK
from pipeline.remote import open_bucket
from pipeline.settings import load_settings
from tests.support.inputs import SAMPLE, write_inputs
from tests.support.runs import rows, run_cli
from tests.support.s3 import S3Server, upload

LISTINGS = TABLES_BY_NAME["listings"]
ACCEPTED = "expected .csv, .parquet, .ndjson, .jsonl or .json; CSV and NDJSON also as .gz or .zst"


@pytest.fixture(scope="module")
def bucket(s3: S3Server) -> str:
    """A bucket of this module's; its URL (with the prefix `site`)."""
    return s3.bucket("remote-input")


def test_a_build_from_the_bucket_is_the_build_of_the_directory(
    bucket: str, sample_build: Path, tmp_path: Path
) -> None:
    url = f"{bucket}/sample"
    upload(url, SAMPLE)  # `catalog/...`, `stores/...`, and `make_sample.py`: not read
    upload(f"{url}/elsewhere", SAMPLE / "stores")  # outside the tables' folders: not read
    output = tmp_path / "out"
    done = run_cli("build", "--input", url, "--output", str(output))
    assert done.returncode == 0, done.stderr
    assert (output / MANIFEST).read_bytes() == (sample_build / MANIFEST).read_bytes()
    ours = pl.read_parquet(output / "current" / MANIFEST_PARQUET)
    assert ours.equals(pl.read_parquet(sample_build / "current" / MANIFEST_PARQUET))
    assert orjson.loads((output / REPORT_JSON).read_bytes())["input"] == url
    con = duckdb.connect()
    con.execute(f"ATTACH '{sample_build / WAREHOUSE}' AS one (READ_ONLY)")
    con.execute(f"ATTACH '{output / WAREHOUSE}' AS other (READ_ONLY)")
    for table in TABLES:
        one = rows(con, f"FROM one.raw.{table.name} ORDER BY ALL")
        assert rows(con, f"FROM other.raw.{table.name} ORDER BY ALL") == one, table.name
    assert rows(con, "FROM other.meta.rejects ORDER BY ALL") == rows(
        con, "FROM one.meta.rejects ORDER BY ALL"
    )
    con.close()
    assert list((output / WORK).glob("*/input")) == []  # the downloads are removed


@pytest.mark.parametrize(
    ("key", "problem"),
    [
        ("stores/listings/notes.txt", f"stores/listings/notes.txt: not an input file ({ACCEPTED})"),
        (
            "stores/listings/part-1.parquet.gz",
            "stores/listings/part-1.parquet.gz: a compressed Parquet file (Parquet compresses "
            "its pages)",
        ),
        ("stores/listings/old/part-1.csv", "stores/listings/old: a folder, not a file"),
        ("stores/listings.old/part-1.csv", "stores/listings.old: a folder, not a file"),
        (
            "stores/Listings.csv",
            "stores/Listings.csv: not a file or folder of any table of stores/ (expected one of "
            "excluded_categories, listings, stores, as <table>.<ext> or <table>/)",
        ),
    ],
)
def test_an_object_that_is_no_input_file_is_refused_by_its_url(
    bucket: str, key: str, problem: str, s3: S3Server
) -> None:
    url = f"{bucket}/refused-{zlib.crc32(key.encode())}"
    store = open_bucket(url)
    obs.put(store, "stores/listings/part-0.csv", b"storeKey,skuId,price\n")
    where = url.removeprefix("s3://")  # a plain PUT: obstore writes no key such as `a//b`
    request = urllib.request.Request(f"{s3.endpoint}/{where}/{key}", data=b"x", method="PUT")
    urllib.request.urlopen(request, timeout=30).read()
    with pytest.raises(InputError) as raised:
        list_input(url)
    assert str(raised.value) == f"{url}/{problem}"


def test_a_key_that_is_no_path_stops_the_listing_naming_it(bucket: str, s3: S3Server) -> None:
    """`a//b` cannot be a file of a directory; the store's client refuses to list it."""
    url = f"{bucket}/empty-segment"
    where = url.removeprefix("s3://")
    request = urllib.request.Request(
        f"{s3.endpoint}/{where}/stores/listings//part-1.csv", data=b"x", method="PUT"
    )
    urllib.request.urlopen(request, timeout=30).read()
    with pytest.raises(InputError) as raised:
        list_input(url)
    message = str(raised.value)
    assert message.startswith(f"{url}/stores/: cannot list: ")
    assert "stores/listings//part-1.csv" in message and "\n" not in message


def test_folder_markers_and_extensions_in_any_case_are_taken_as_in_a_directory(
    bucket: str,
) -> None:
    url = f"{bucket}/markers"
    store = open_bucket(url)
    obs.put(store, "stores/listings/", b"")  # what a console's "create folder" writes
    obs.put(store, "stores/listings/B.CSV.GZ", b"")
    obs.put(store, "stores/listings/a.Parquet", b"")
    listing = list_input(url)
    found = [(f.key, f.format, f.compression, f.size) for f in listing.files(LISTINGS)]
    assert found == [
        ("stores/listings/B.CSV.GZ", "csv", "gzip", 0),
        ("stores/listings/a.Parquet", "parquet", None, 0),
    ]
    with pytest.raises(InputError) as raised:
        listing.files(TABLES_BY_NAME["categories"])
    assert str(raised.value).startswith(f"{url}/catalog/categories: missing required input")


def test_a_bad_row_in_an_object_is_a_reject_naming_its_file_and_row(
    bucket: str, tmp_path: Path
) -> None:
    listings = [
        {"storeKey": "s", "skuId": 1000, "price": "1.00", "quantity": 1},
        {"storeKey": "s", "skuId": 1001, "price": "one euro", "quantity": 1},
    ]
    directory = write_inputs(tmp_path / "in", listings=listings)
    url = f"{bucket}/bad-row"
    upload(url, directory)
    found = {}
    for name, source in (("directory", directory), ("bucket", url)):
        con = db.connect()
        db.create_schemas(con)
        ingest.ingest_all(con, source)
        transform.run_steps(con)
        found[name] = rows(con, "SELECT source_file, source_row, reason FROM meta.rejects")
        con.close()
    assert found["bucket"] == found["directory"]
    assert [r[:2] for r in found["bucket"]] == [("stores/listings.csv", 2)]


def test_an_object_replaced_after_the_listing_stops_the_build_naming_its_url(
    bucket: str, tmp_path: Path
) -> None:
    url = f"{bucket}/replaced"
    store = open_bucket(url)
    obs.put(store, "stores/listings/part-1.csv", b"storeKey,skuId,price,quantity\ns,1000,1,1\n")
    obs.put(store, "stores/listings/part-2.csv", b"storeKey,skuId,price,quantity\ns,1001,1,1\n")
    first, second = list_input(url).files(LISTINGS)
    obs.put(store, first.key, b"storeKey,skuId,price,quantity\ns,1000,2,1\n")  # same size
    obs.delete(store, second.key)
    con = db.connect()
    con.execute("CREATE SCHEMA raw")
    create_raw_table(con, LISTINGS, {})
    with pytest.raises(InputError) as raised:
        ingest_object(con, LISTINGS, first, {})
    assert str(raised.value) == (
        f"{url}/stores/listings/part-1.csv: changed while the build read it (its ETag is no "
        "longer the one listed); nothing of it was used: build again once the export is complete"
    )
    with pytest.raises(InputError) as raised:
        second.download(tmp_path)
    assert str(raised.value) == (
        f"{url}/stores/listings/part-2.csv: cannot read: vanished since it was listed"
    )
    assert rows(con, "SELECT count(*) FROM raw.listings") == [(0,)]
    con.close()


def test_an_error_inside_a_downloaded_object_names_its_url(bucket: str, tmp_path: Path) -> None:
    url = f"{bucket}/header"
    store = open_bucket(url)
    obs.put(store, "stores/listings.csv", b"storeKey,skuId,skuId\ns,1,1\n")
    (file,) = list_input(url).files(LISTINGS)
    con = db.connect()
    con.execute("CREATE SCHEMA raw")
    create_raw_table(con, LISTINGS, {})
    with pytest.raises(InputError) as raised:
        ingest_object(con, LISTINGS, file, {})
    assert (
        str(raised.value)
        == f"{url}/stores/listings.csv: header: column skuId appears more than once"
    )
    con.close()


def test_parquet_objects_types_come_from_their_footers_as_from_the_files(
    bucket: str, tmp_path: Path, s3: S3Server
) -> None:
    """The driver of a distributed build reads the listings' Parquet schemas by two ranged
    GETs each, never the rows, and gets the types a local build loads them with."""
    folder = tmp_path / "stores" / "listings"
    folder.mkdir(parents=True)
    frame = pl.DataFrame({"storeKey": ["s"] * 3, "skuId": [1, 2, 3], "price": [1.5, 2.0, 3.25]})
    frame.write_parquet(folder / "part-1.parquet")
    frame.with_columns(quantity=pl.lit(2)).write_parquet(folder / "part-2.parquet")
    url = f"{bucket}/footers"
    upload(url, tmp_path)
    con = duckdb.connect()
    local = raw_types(con, LISTINGS, table_files(tmp_path, LISTINGS))
    assert local  # typed columns, which the footers must give too
    before = s3.log.read_text().count("/footers/stores/listings/part-1.parquet")
    assert remote_input.raw_types(con, LISTINGS, list_input(url).files(LISTINGS)) == local
    requests = s3.log.read_text().count("/footers/stores/listings/part-1.parquet") - before
    assert requests == 2  # the last 8 bytes, then the footer
    con.close()


def test_the_input_setting_keeps_a_url_and_reads_anything_else_as_a_directory() -> None:
    assert load_settings(None, input="s3://bucket/in").input == "s3://bucket/in"
    assert load_settings(None, input="data").input == Path("data")
    assert load_settings(None, input=Path("s3:/folded")).input == Path("s3:/folded")


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("http://host/in", "neither an input directory nor an object-store URL (s3://, s3a://, "),
        ("s3://bucket/in?x=1", "not a plain bucket and prefix (s3://bucket/prefix, "),
        ("s3://bucket/../in", "not a plain bucket and prefix (s3://bucket/prefix, "),
    ],
)
def test_an_input_url_that_is_not_a_plain_bucket_and_prefix_is_refused(
    url: str, problem: str
) -> None:
    with pytest.raises(InputError) as raised:
        list_input(url)
    assert str(raised.value).startswith(f"{url}: {problem}")


def test_a_dry_run_reads_the_bucket_and_leaves_nothing(bucket: str, tmp_path: Path) -> None:
    url = f"{bucket}/dry-run"
    upload(url, write_inputs(tmp_path / "in", listings=[]))
    done = run_cli("build", "--dry-run", "--input", url, "--output", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    summary = orjson.loads(done.stdout)
    assert summary["input"] == url and summary["tables"]["categories"]["rows"] == 1
    assert not (tmp_path / "out").exists()
