"""Never publish bad data, never lose a good build: rejects, handled failures, crashes,
concurrent readers, determinism and hostile path values."""

from __future__ import annotations

import hashlib
import os
import queue
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import duckdb
import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline import db
from pipeline.api import urls
from pipeline.api.params import InventoryParams
from pipeline.build import build
from pipeline.errors import BuildError, InputError
from pipeline.settings import load_settings
from tests.conftest import (
    SAMPLE,
    rows,
    run_cli,
    run_pipeline,
    site_files,
    write_inputs,
    write_table,
)


def published_state(output: Path) -> dict[str, str]:
    """What a reader sees: the current release, the warehouse's bytes, every site file's hash."""
    state = {"current": os.readlink(output / "current")}
    state["warehouse"] = hashlib.sha256((output / "warehouse.duckdb").read_bytes()).hexdigest()
    for name, path in site_files(output / "site").items():
        state[name] = hashlib.sha256(path.read_bytes()).hexdigest()
    return state


def _good_build(folder: Path) -> Path:
    """A published build of one store's one listing, in `folder`/out."""
    output = folder / "out"
    listings = [{"storeKey": "s1", "skuId": 1000, "price": "1.00", "quantity": 1}]
    build(
        load_settings(None, input=write_inputs(folder / "good", listings=listings), output=output)
    )
    return output


@pytest.fixture(scope="module")
def good_output(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One published build, shared by the tests whose builds fail and so must leave it as is."""
    return _good_build(tmp_path_factory.mktemp("good"))


# --- handled failures ---------------------------------------------------------------------------


def _missing_file(d: Path) -> None:
    (d / "catalog" / "skus.csv").unlink()


def _missing_column(d: Path) -> None:
    write_table(d, "products", [{"productId": 100, "categoryId": 1, "name": "x"}])


def _unreadable(d: Path) -> None:
    (d / "catalog" / "skus.csv").unlink()
    (d / "catalog" / "skus.parquet").write_bytes(b"PAR1 truncated")


def _empty_catalog(d: Path) -> None:
    write_table(d, "products", [])


def _too_many_rejects(d: Path) -> None:
    write_table(
        d,
        "listings",
        [
            {"storeKey": "s1", "skuId": 1000, "price": "1.00", "quantity": 1},
            {"storeKey": "s1", "skuId": 1001, "price": "oops", "quantity": 1},
        ],
    )


@pytest.mark.parametrize(
    ("breaks", "message"),
    [
        (_missing_file, r"catalog/skus: missing required input"),
        (_missing_column, r"catalog/products.csv: missing required column groupId"),
        (_unreadable, r"catalog/skus.parquet: cannot read Parquet"),
        (_empty_catalog, r"catalog/products: no usable product rows \(empty catalog\)"),
        (
            _too_many_rejects,
            r"stores/listings: 1 of 2 rows rejected \(50.0%, above max_reject_share 5.0%\)",
        ),
    ],
)
def test_a_failed_build_says_why_in_one_line_and_publishes_nothing(
    good_output: Path, tmp_path: Path, breaks: Any, message: str
) -> None:
    before = published_state(good_output)
    bad = write_inputs(tmp_path / "bad")
    breaks(bad)
    result = run_cli("build", "--input", str(bad), "--output", str(good_output))
    assert result.returncode == 1
    *logs, last = result.stderr.strip().splitlines()
    assert "Traceback" not in result.stderr, result.stderr
    assert all(orjson.loads(line)["event"] for line in logs)  # structured log lines, then
    assert __import__("re").search(message, last), last  # one line that says what is wrong
    assert published_state(good_output) == before


def test_the_reject_threshold_is_configuration(tmp_path: Path) -> None:
    good_output = _good_build(tmp_path)  # its own: a build here publishes
    bad = write_inputs(tmp_path / "bad")
    _too_many_rejects(bad)
    config = tmp_path / "pipeline.toml"
    config.write_text("[build]\nmax_reject_share = 0.5\n")
    assert (
        run_cli(
            "build", "--input", str(bad), "--output", str(good_output), "--config", str(config)
        ).returncode
        == 0
    )
    env = {"PIPELINE_BUILD__MAX_REJECT_SHARE": "0.4"}
    assert (
        run_cli("build", "--input", str(bad), "--output", str(good_output), env=env).returncode == 1
    )


# --- a corpus of bad rows -------------------------------------------------------------------------

GOOD = {"storeKey": "good", "channelId": 0, "price": "1.00", "quantity": 1}


def test_every_bad_row_is_accounted_for_and_every_good_row_published(tmp_path: Path) -> None:
    good = [{**GOOD, "skuId": s} for s in (1000, 1001, 1010)]
    bad = [
        {**GOOD, "skuId": None},  # missing key
        {**GOOD, "skuId": "x"},  # wrong type
        {**GOOD, "skuId": 1000, "storeKey": "other", "price": "-0.01"},  # negative price
        {**GOOD, "skuId": 1000, "storeKey": "other", "quantity": "-1"},  # negative quantity
        {**GOOD, "skuId": 1000, "storeKey": "other", "price": "0.001"},  # three decimals
        {**GOOD, "skuId": 4242},  # unknown sku
        {**GOOD, "skuId": 1000, "storeKey": "dup"},
        {**GOOD, "skuId": 1000, "storeKey": "dup"},
        {**GOOD, "skuId": 1000, "storeKey": "c", "isCustom": "true"},  # no storePriceCustomId
        {**GOOD, "skuId": 1000, "storeKey": "../../etc"},  # invalid store key
        {**GOOD, "skuId": 1000, "storeKey": "x" * 65},
        {**GOOD, "skuId": 1000, "storeKey": "c", "channelId": "zero"},
    ]
    input_dir = write_inputs(
        tmp_path / "in",
        products=[
            {"productId": 100, "categoryId": 1, "groupId": 10, "name": "Sol Ring"},
            {"productId": 101, "categoryId": 1, "groupId": 10, "name": "Black Lotus"},
            {"productId": 102, "categoryId": 7, "groupId": 10, "name": "Unknown category"},
            {"productId": 103, "categoryId": 1, "groupId": 99, "name": "Unknown group"},
        ],
        skus=[
            {"skuId": 1000, "productId": 100, "conditionId": 1, "languageId": 1, "printingId": 1},
            {"skuId": 1001, "productId": 100, "conditionId": 2, "languageId": 1, "printingId": 2},
            {"skuId": 1010, "productId": 101, "conditionId": 1, "languageId": 1, "printingId": 1},
            {"skuId": 1020, "productId": 102, "conditionId": 1, "languageId": 1, "printingId": 1},
        ],
        listings=good + bad + [{**GOOD, "skuId": 1020}],
    )
    output = tmp_path / "out"
    config = tmp_path / "lenient.toml"
    config.write_text("[build]\nmax_reject_share = 1.0\n")
    build(load_settings(config, input=input_dir, output=output))
    con = duckdb.connect(str(output / "warehouse.duckdb"), read_only=True)
    rejected = {
        r[0]
        for r in rows(
            con, "SELECT DISTINCT source_row FROM meta.rejects WHERE table_name = 'listings'"
        )
    }
    assert rejected == set(range(len(good) + 1, len(good) + len(bad) + 2))
    assert rows(
        con,
        "SELECT table_name, source_row, reason FROM meta.rejects WHERE table_name <> 'listings' ORDER BY 1, 2",
    ) == [
        ("products", 3, "unknown categoryId"),
        ("products", 4, "unknown groupId"),
        ("skus", 4, "unknown productId"),
    ]
    assert rows(con, "SELECT sku_id FROM marts.listing ORDER BY 1") == [(1000,), (1001,), (1010,)]
    page = orjson.loads(
        (output / "site/v1.39.0/stores/good/inventory/products/index.json").read_bytes()
    )
    assert sorted(s["skuId"] for p in page["results"] for s in p["skus"]) == [1000, 1001, 1010]
    con.close()


# --- malformed files, generated ------------------------------------------------------------------


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


# --- crashes, concurrent readers, determinism, paths ------------------------------------------


@pytest.mark.slow
def test_a_killed_build_leaves_the_published_build_and_the_next_one_succeeds(
    tmp_path: Path,
) -> None:
    output = tmp_path / "out"
    build(load_settings(None, input=SAMPLE, output=output))
    good = published_state(output)
    started = time.monotonic()
    run_cli("build", "--input", str(SAMPLE), "--output", str(tmp_path / "timing"))
    duration = time.monotonic() - started
    rng = random.Random(20261121)
    for _ in range(14):  # at random moments of the build; ~2 s a round on 2 cores
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "pipeline",
                "build",
                "--input",
                str(SAMPLE),
                "--output",
                str(output),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(rng.uniform(0.05, duration * 1.1))
        process.send_signal(signal.SIGKILL)
        process.wait()
        state = published_state(output)
        if state["current"] != good["current"]:  # the build got through before the kill
            assert {k: v for k, v in state.items() if k not in ("current", "warehouse")} == {
                k: v for k, v in good.items() if k not in ("current", "warehouse")
            }
            good = state
        assert state == good
    result = run_cli("build", "--input", str(SAMPLE), "--output", str(output))
    assert result.returncode == 0, result.stderr
    assert not list((output / ".work").glob("*"))
    published = [r for r in (output / "releases").iterdir()]
    assert all((r / ".published").exists() for r in published) and len(published) <= 3


READER = r"""
import hashlib, json, os, sys
import duckdb
output, stop = sys.argv[1], sys.argv[2]
con = duckdb.connect(os.path.join(output, "warehouse.duckdb"), read_only=True)
first = con.execute("SELECT count(*) FROM marts.listing").fetchall()
reads, seen = 0, []
while not os.path.exists(stop):
    assert con.execute("SELECT count(*) FROM marts.listing").fetchall() == first
    release = os.path.realpath(os.path.join(output, "current"))
    manifest = json.load(open(os.path.join(release, "manifest.json")))
    for entry in manifest["files"][::40]:
        body = open(os.path.join(release, "site", entry["path"]), "rb").read()
        assert hashlib.sha256(body).hexdigest() == entry["sha256"], entry["path"]
        if entry["path"].endswith(".json"):
            json.loads(body)
    page = open(os.path.join(output, "site/v1.39.0/stores/tiny7/inventory/products/index.json"), "rb").read()
    json.loads(page)
    reads += 1
    if not seen or seen[-1] != os.path.basename(release):
        seen.append(os.path.basename(release))
        print("read", seen[-1], flush=True)  # a whole release read, checked against its manifest
print("done", reads, flush=True)
"""


@pytest.mark.slow
def test_readers_never_see_an_error_a_partial_file_or_a_mix(tmp_path: Path) -> None:
    """A reader checks releases in a loop while four builds publish; each build waits until the
    reader has read the previous one whole, and the reader stops when told (no time window)."""
    output = tmp_path / "out"
    build(load_settings(None, input=SAMPLE, output=output))
    other = tmp_path / "other"
    shutil.copytree(SAMPLE, other, ignore=shutil.ignore_patterns("out", "*.py"))
    products = other / "catalog" / "products.csv"  # a different build: renamed products
    products.write_text(
        products.read_text(encoding="utf-8").replace("Sol Ring", "Sol Ring (Alt)"), encoding="utf-8"
    )
    stop, errors = tmp_path / "stop", tmp_path / "reader.err"
    with errors.open("w") as stderr:
        reader = subprocess.Popen(
            [sys.executable, "-c", READER, str(output), str(stop)],
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
        )
    lines: queue.Queue[str] = queue.Queue()

    def forward() -> None:
        assert reader.stdout is not None
        for line in reader.stdout:
            lines.put(line)
        lines.put("")  # the end of its output: the reader exited

    threading.Thread(target=forward, daemon=True).start()

    def next_line() -> str:
        try:
            line = lines.get(timeout=300)  # a safety net only: a read takes well under a second
        except queue.Empty:
            reader.kill()
            raise AssertionError("the reader reported nothing for 300 s") from None
        assert line, f"the reader failed ({reader.wait()}): {errors.read_text()}"
        return line.strip()

    def read_by_the_reader(release: str) -> None:
        while next_line() != f"read {release}":
            pass

    published = [Path(os.readlink(output / "current")).name]
    try:
        read_by_the_reader(published[-1])
        for n in range(4):
            result = run_cli(
                "build", "--input", str(other if n % 2 == 0 else SAMPLE), "--output", str(output)
            )
            assert result.returncode == 0, result.stderr
            published.append(Path(os.readlink(output / "current")).name)
            read_by_the_reader(published[-1])
        stop.touch()
        done, reads = next_line().split()
        assert (done, int(reads) >= len(published)) == ("done", True)
        assert reader.wait(timeout=300) == 0, errors.read_text()
    finally:
        if reader.poll() is None:
            reader.kill()
            reader.wait()
    assert len(set(published)) == 5, published  # every build published a release of its own


def test_two_builds_of_the_same_inputs_are_byte_identical(
    sample_build: Path, tmp_path: Path
) -> None:
    again = tmp_path / "again"
    build(load_settings(None, input=SAMPLE, output=again))
    assert (again / "manifest.json").read_bytes() == (sample_build / "manifest.json").read_bytes()
    first, second = published_state(sample_build), published_state(again)
    for state in (first, second):
        del state["current"], state["warehouse"]
    assert first == second


@settings(max_examples=100, deadline=None)
@given(
    key=st.from_regex(r"[A-Za-z0-9_-]{1,64}", fullmatch=True),
    name=st.text(min_size=1, max_size=20),
    number=st.integers(-(2**31), 2**31 - 1),
    sort=st.sampled_from(["price asc", "name desc"]),
)
def test_page_paths_never_leave_the_store_directory(
    key: str, name: str, number: int, sort: str
) -> None:
    params = InventoryParams(
        categoryName=name, productName=name, groupName=name, categoryId=number, sort=sort
    )
    path = urls.inventory_page_path(key, params)
    assert path.parts[:5] == ("v1.39.0", "stores", key.lower(), "inventory", "products")
    assert len(path.parts) == 6 and path.name not in (".", "..") and "/" not in path.name
    assert not path.is_absolute()


def test_hostile_store_keys_are_rejected_and_write_nothing(tmp_path: Path) -> None:
    hostile = ["../../escape", "..", "a/b", "/abs", "a\\b", "%2e%2e", "x" * 65, "nul\x00"]
    listings = [{"storeKey": k, "skuId": 1000, "price": "1", "quantity": 1} for k in hostile]
    listings.append({"storeKey": "fine", "skuId": 1000, "price": "1", "quantity": 1})
    output = tmp_path / "nested" / "out"
    config = tmp_path / "lenient.toml"
    config.write_text("[build]\nmax_reject_share = 1.0\n")
    build(
        load_settings(config, input=write_inputs(tmp_path / "in", listings=listings), output=output)
    )
    stores = sorted(p.name for p in (output / "site" / "v1.39.0" / "stores").iterdir())
    assert stores == ["fine"]
    assert sorted(p.name for p in (tmp_path / "nested").iterdir()) == ["out"]
    con = duckdb.connect(str(output / "warehouse.duckdb"), read_only=True)
    assert rows(con, "SELECT count(*) FROM meta.rejects WHERE column_name = 'storeKey'") == [
        (len(hostile),)
    ]
    con.close()


def test_a_second_build_on_the_same_output_waits_its_turn(good_output: Path) -> None:
    import fcntl

    with (good_output / ".build.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        with pytest.raises(BuildError, match="another build is running"):
            build(load_settings(None, input=SAMPLE, output=good_output))


def test_exit_codes_settings_errors_and_crashes(tmp_path: Path) -> None:
    config = tmp_path / "typo.toml"
    config.write_text("max_rejects_share = 0.5\n")  # a typo is an error, not ignored
    args = ("build", "--input", str(SAMPLE), "--output", str(tmp_path / "out"))
    bad = run_cli(*args, "--config", str(config))
    assert bad.returncode == 1 and "max_rejects_share" in bad.stderr + bad.stdout
    debug = run_cli(*args, "--config", str(config), "--debug")
    assert debug.returncode == 1 and "Traceback" in debug.stderr
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the output directory should be")
    crash = run_cli("build", "--input", str(SAMPLE), "--output", str(blocker / "out"))
    assert crash.returncode == 2
    assert crash.stderr.strip().splitlines()[-1].startswith("build crashed: ")
    assert "Traceback" not in crash.stderr  # every command's exit codes: tests/test_cli.py


def test_a_page_size_listed_twice_never_truncates_a_published_file(tmp_path: Path) -> None:
    config = tmp_path / "twice.toml"
    config.write_text("[export]\nlimits = [10, 10]\nvariants = ['categoryId', 'categoryId']\n")
    output = tmp_path / "out"
    for _ in range(2):
        build(load_settings(config, input=SAMPLE, output=output))
    for entry in orjson.loads((output / "manifest.json").read_bytes())["files"]:
        body = (output / "site" / entry["path"]).read_bytes()
        assert hashlib.sha256(body).hexdigest() == entry["sha256"], entry["path"]


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


def test_an_unparseable_seller_portal_quantity_is_rejected_not_dropped(tmp_path: Path) -> None:
    input_dir = write_inputs(tmp_path / "a")
    (input_dir / "stores" / "listings.csv").unlink()
    folder = input_dir / "stores" / "listings"
    folder.mkdir()
    (folder / "shop.csv").write_text(
        "TCGplayer Id,Total Quantity,TCG Marketplace Price\n1000,1,1.00\n1001,1.5,2.00\n1010,0,3.00\n",
        encoding="utf-8",
    )
    con = run_pipeline(input_dir)
    assert rows(con, "SELECT source_row, column_name, value FROM meta.rejects") == [
        (2, "quantity", "1.5")
    ]
    con.close()


def test_a_site_without_stores_and_a_relative_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    build(load_settings(None, input=SAMPLE, output=Path("out")))
    build(load_settings(None, input=write_inputs(Path("in"), listings=[]), output=Path("empty")))
    assert (tmp_path / "empty" / "manifest.json").is_file()
    # A live release without its `.published` mark (a kill between the swap and the mark)
    # must survive the next build's clean-up.
    (Path("out") / "current" / ".published").unlink()
    build(load_settings(None, input=SAMPLE, output=Path("out")))
    assert (Path("out") / "current" / "manifest.json").is_file()


def _duckdb_bytes(con: duckdb.DuckDBPyConnection) -> int:
    """The memory DuckDB accounts for (its buffer pool: cached blocks, temporary data)."""
    return int(db.scalar(con, "SELECT coalesce(sum(memory_usage_bytes), 0) FROM duckdb_memory()"))


def test_duckdb_gives_its_memory_back_and_keeps_its_limit(tmp_path: Path) -> None:
    """Before the exporter holds manifests of millions of files, DuckDB's cache of the
    warehouse's blocks is evicted, and the memory limit is the one the build was opened with."""
    con = db.connect(tmp_path / "w.duckdb", memory_limit="1GB", threads=2)
    limit = db.scalar(con, "SELECT current_setting('memory_limit')")
    # 24M hashes: about 190 MB that do not compress, cached once written and read.
    con.execute("CREATE TABLE t AS SELECT hash(range) AS h FROM range(24000000)")
    con.execute("CHECKPOINT")
    total = db.scalar(con, "SELECT sum(h) FROM t")
    assert _duckdb_bytes(con) > 150_000_000
    db.release_memory(con, "1GB")
    assert _duckdb_bytes(con) <= 64_000_000  # the 64MB (DuckDB: 10^6 bytes) it lowers the limit to
    assert db.scalar(con, "SELECT current_setting('memory_limit')") == limit
    assert db.scalar(con, "SELECT sum(h) FROM t") == total  # evicted, not lost
    con.close()
