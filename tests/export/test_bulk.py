"""The bulk files (docs/serving.md, "Bulk files"): exact rows on a tiny input, every file of the
sample read by polars with the documented schema and agreeing with the API's pages, no store
key, the same bytes for the same rows and an unchanged group's CSV carried (same inode and
sha256), the index, the build's time, and the setting that turns them off."""

from __future__ import annotations

import hashlib
import os
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import polars as pl
import pytest

from pipeline.api.urls import BULK_DIR
from pipeline.build import build
from pipeline.errors import BuildError
from pipeline.export.pages.bulk import COLUMNS, EXT, SOURCE_DATE_EPOCH, built_at
from pipeline.settings import load_settings
from tests.support.golden import BUILT_AT
from tests.support.inputs import ROOT, SAMPLE, write_inputs

DOCS = ROOT / "docs" / "serving.md"
TYPES: dict[str, pl.DataType] = {
    "Int32": pl.Int32(),
    "Int64": pl.Int64(),
    "String": pl.String(),
    "Decimal(18,2)": pl.Decimal(18, 2),
    "Datetime(us)": pl.Datetime("us"),
}


def documented() -> tuple[dict[str, pl.DataType], dict[str, pl.DataType]]:
    """The columns' table of docs/serving.md: (CSV schema, Parquet schema), ext{Name} left out."""
    section = DOCS.read_text().split("## Bulk files", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| (\w+) \| ([\w(),]+) \| ([\w(),]+) \|", section, re.MULTILINE)
    return {c: TYPES[t] for c, t, _ in rows}, {c: TYPES[t] for c, _, t in rows}


def bulk_files(output: Path) -> dict[str, Path]:
    """Every bulk file of a published site by its path in the site, the index included."""
    root = output / "site"
    return {
        p.relative_to(root).as_posix(): p
        for p in sorted((root / BULK_DIR).rglob("*"))
        if p.is_file()
    }


def read_csv(path: Path) -> pl.DataFrame:
    """A group's CSV with the documented schema (each ext column text)."""
    csv_schema, _ = documented()
    header = path.read_text(encoding="utf-8").split("\n", 1)[0].split(",")
    assert header[: len(csv_schema)] == list(csv_schema), path
    extended = header[len(csv_schema) :]
    assert all(c.startswith(EXT) for c in extended) and extended == sorted(extended), path
    schema = {**csv_schema, **dict.fromkeys(extended, pl.String())}
    return pl.read_csv(path, schema=schema)


def test_the_documented_columns_are_the_written_ones() -> None:
    _, parquet = documented()
    assert parquet == COLUMNS


def test_polars_reads_every_bulk_file_of_the_sample_with_the_documented_schema(
    sample_build: Path,
) -> None:
    files = bulk_files(sample_build)
    index = orjson.loads(files.pop(f"{BULK_DIR}/index.json").read_bytes())
    assert index["builtAt"] == datetime.fromtimestamp(BUILT_AT, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert sorted(f["path"] for f in index["files"]) == sorted(f"/{p}" for p in files)
    _, parquet_schema = documented()
    manifest = {
        f["path"]: f for f in orjson.loads((sample_build / "manifest.json").read_bytes())["files"]
    }
    csvs = parquets = 0
    for entry in index["files"]:
        path = entry["path"].lstrip("/")
        body = files[path].read_bytes()
        assert (entry["bytes"], entry["sha256"]) == (len(body), hashlib.sha256(body).hexdigest())
        assert (manifest[path]["bytes"], manifest[path]["sha256"]) == (len(body), entry["sha256"])
        if path.endswith(".parquet"):
            frame = pl.read_parquet(files[path])
            fixed = dict(list(frame.schema.items())[: len(parquet_schema)])
            assert fixed == parquet_schema, path
            assert all(frame.schema[c] == pl.String for c in frame.columns[len(fixed) :])
            assert (frame["categoryId"] == entry["categoryId"]).all()
            # The category's rows are its groups' CSV rows, typed.
            groups = [
                read_csv(files[p])
                for p in files
                if p.startswith(f"{BULK_DIR}/{entry['categoryId']}/")
            ]
            text = pl.concat(groups, how="diagonal_relaxed").select(frame.columns)
            text = text.with_columns(
                pl.col("modifiedOn").str.to_datetime("%Y-%m-%dT%H:%M:%S%.f", time_unit="us")
            )
            assert text.equals(frame), path
            parquets += 1
        else:
            frame = read_csv(files[path])
            assert (frame["groupId"] == entry["groupId"]).all(), path
            assert frame.height > 0
            csvs += 1
    assert csvs == 21 and parquets == 5


def test_the_rows_are_the_catalog_and_its_market_prices(sample_build: Path) -> None:
    """Each group's CSV holds every product of the group, and its prices are the entries of
    the group's pricing page; its ext columns are the products' extendedData."""
    import duckdb

    con = duckdb.connect(str(sample_build / "warehouse.duckdb"), read_only=True)
    try:
        products = dict(con.execute("SELECT product_id, group_id FROM staging.products").fetchall())
        extended = dict(
            con.execute("SELECT product_id, extended_json FROM export.catalog_product").fetchall()
        )
    finally:
        con.close()
    site = sample_build / "site"
    seen: set[int] = set()
    for path in sorted((site / BULK_DIR).glob("*/*.csv")):
        frame = read_csv(path)
        group = int(path.stem)
        assert set(frame["productId"]) == {p for p, g in products.items() if g == group}
        seen |= set(frame["productId"])
        page = orjson.loads((site / f"v1.39.0/pricing/group/{group}/index.json").read_bytes())
        priced = [
            {
                "productId": r["productId"],
                "lowPrice": _money(r["lowPrice"]),
                "midPrice": _money(r["midPrice"]),
                "highPrice": _money(r["highPrice"]),
                "marketPrice": None,
                "directLowPrice": None,
                "subTypeName": r["subTypeName"],
            }
            for r in page["results"]
        ]
        written = frame.filter(pl.col("printingId").is_not_null()).select(
            "productId", *(pl.col(c).cast(pl.String) for c in list(priced[0])[1:])
        )
        assert written.to_dicts() == priced, path
        for row in frame.to_dicts():
            entries: dict[str, Any] = {}
            for e in orjson.loads("{" + extended[row["productId"]].lstrip(",") + "}")[
                "extendedData"
            ]:
                column = EXT + re.sub("[^A-Za-z0-9]", "", e["name"] or "")
                if column != EXT and e["value"] is not None:
                    entries.setdefault(column, e["value"])
            got = {c: v for c, v in row.items() if c.startswith(EXT) and v is not None}
            assert got == entries, (path, row["productId"])
    assert seen == set(products)


def _money(value: float | None) -> str | None:
    return None if value is None else f"{value:.2f}"


def test_no_bulk_file_names_a_store(sample_build: Path) -> None:
    stores = pl.read_csv(SAMPLE / "stores" / "stores.csv")
    keys = [k.lower() for k in stores[stores.columns[0]].to_list()]
    assert keys
    for path, file in bulk_files(sample_build).items():
        body = file.read_bytes().lower()
        if path.endswith(".parquet"):
            body = pl.read_parquet(file).write_csv().encode().lower()
        for key in keys:
            assert key.encode() not in body, (path, key)


# --- a tiny catalog, two nights ------------------------------------------------------------------

CATALOG: dict[str, list[dict[str, Any]]] = {
    "categories": [{"categoryId": 1, "name": "Magic"}, {"categoryId": 2, "name": "Pokemon"}],
    "groups": [
        {"groupId": 10, "categoryId": 1, "name": "Alpha"},
        {"groupId": 11, "categoryId": 1, "name": "Beta"},
        {"groupId": 20, "categoryId": 2, "name": "Base"},
    ],
    "products": [
        {
            "productId": 100,
            "categoryId": 1,
            "groupId": 10,
            "name": "Sol Ring",
            "rarity": "Uncommon",
            "number": "270",
        },
        {
            "productId": 101,
            "categoryId": 1,
            "groupId": 10,
            "name": 'Black, "Lotus"',
            "rarity": "Rare",
            "number": None,
        },
        {
            "productId": 110,
            "categoryId": 1,
            "groupId": 11,
            "name": "Mox",
            "rarity": None,
            "number": None,
        },
        {
            "productId": 200,
            "categoryId": 2,
            "groupId": 20,
            "name": "Pikachu",
            "rarity": None,
            "number": "58",
        },
    ],
    "skus": [
        {"skuId": 1000, "productId": 100, "conditionId": 1, "languageId": 1, "printingId": 1},
        {"skuId": 1001, "productId": 100, "conditionId": 1, "languageId": 1, "printingId": 2},
        {"skuId": 1002, "productId": 100, "conditionId": 2, "languageId": 1, "printingId": 1},
        {"skuId": 1010, "productId": 101, "conditionId": 1, "languageId": 1, "printingId": 1},
        {"skuId": 2000, "productId": 200, "conditionId": 1, "languageId": 1, "printingId": 1},
    ],
}


def _listings(price: str) -> list[dict[str, Any]]:
    return [
        {"storeKey": "s1", "skuId": 1000, "price": price, "quantity": 1},
        {"storeKey": "s2", "skuId": 1002, "price": "3.50", "quantity": 2},
        {"storeKey": "s2", "skuId": 1000, "price": "1.25", "quantity": 0},  # not for sale
        {"storeKey": "s1", "skuId": 2000, "price": "0.10", "quantity": 5},
    ]


def _night(folder: Path, name: str, price: str) -> Path:
    output = folder / "out"
    inputs = write_inputs(folder / name, **CATALOG, listings=_listings(price))
    build(load_settings(None, input=inputs, output=output))
    return output


def test_a_group_csv_exact_on_a_tiny_input(tmp_path: Path) -> None:
    output = _night(tmp_path, "in", "2.00")
    site = output / "site" / BULK_DIR
    assert (site / "1" / "10.csv").read_text(encoding="utf-8") == (
        "productId,name,cleanName,imageUrl,categoryId,groupId,url,modifiedOn,imageCount,"
        "lowPrice,midPrice,highPrice,marketPrice,directLowPrice,subTypeName,printingId,"
        "extNumber,extRarity\n"
        "100,Sol Ring,,,1,10,,,,2.00,2.00,3.50,,,Normal,1,270,Uncommon\n"
        "100,Sol Ring,,,1,10,,,,,,,,,Foil,2,270,Uncommon\n"
        '101,"Black, ""Lotus""",,,1,10,,,,,,,,,Normal,1,,Rare\n'
    )
    # A product with no SKU: one row, printing and prices empty; no ext column holds a value.
    assert (site / "1" / "11.csv").read_text(encoding="utf-8").split("\n")[1:] == [
        "110,Mox,,,1,11,,,,,,,,,,",
        "",
    ]
    assert sorted(p.relative_to(site).as_posix() for p in site.rglob("*.*")) == [
        "1.parquet",
        "1/10.csv",
        "1/11.csv",
        "2.parquet",
        "2/20.csv",
        "index.json",
    ]
    category = pl.read_parquet(site / "1.parquet")
    assert category.columns[-2:] == ["extNumber", "extRarity"]
    assert category["productId"].to_list() == [100, 100, 101, 110]


def test_an_unchanged_groups_files_are_carried_with_their_inode_and_sha256(
    tmp_path: Path,
) -> None:
    """Night 2 changes one price of group 10: its CSV, its category's Parquet and the index
    are new files; every other bulk file is the previous release's, hard-linked."""
    first = {
        p: (f.stat().st_ino, f.read_bytes())
        for p, f in bulk_files(_night(tmp_path, "a", "2.00")).items()
    }
    second = {
        p: (f.stat().st_ino, f.read_bytes())
        for p, f in bulk_files(_night(tmp_path, "b", "2.50")).items()
    }
    assert first.keys() == second.keys()
    changed = sorted(p for p in first if first[p][1] != second[p][1])
    assert changed == [f"{BULK_DIR}/1.parquet", f"{BULK_DIR}/1/10.csv", f"{BULK_DIR}/index.json"]
    for path in first:
        assert (first[path][0] == second[path][0]) == (path not in changed), path
    # The same rows, the same bytes: a third night with the first night's input is the first's.
    third = bulk_files(_night(tmp_path, "c", "2.00"))
    for path, file in third.items():
        assert file.read_bytes() == first[path][1], path


def test_the_build_time_is_the_builds_start_or_source_date_epoch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    started = datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)
    monkeypatch.delenv(SOURCE_DATE_EPOCH)
    assert built_at(started) == started
    monkeypatch.setenv(SOURCE_DATE_EPOCH, "86400")
    assert built_at(started) == datetime(1970, 1, 2, tzinfo=UTC)
    monkeypatch.setenv(SOURCE_DATE_EPOCH, "yesterday")
    with pytest.raises(BuildError, match="SOURCE_DATE_EPOCH 'yesterday': not a whole number"):
        built_at(started)


def test_the_index_states_the_builds_start(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(SOURCE_DATE_EPOCH)
    before = datetime.now(UTC).replace(microsecond=0)
    output = _night(tmp_path, "in", "2.00")
    stamp = orjson.loads((output / "site" / BULK_DIR / "index.json").read_bytes())["builtAt"]
    report = orjson.loads((output / "build_report.json").read_bytes())
    started = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    assert before <= started <= datetime.now(UTC)
    assert stamp.startswith(report["started_at"][:19]), (stamp, report["started_at"])


def test_the_setting_turns_the_bulk_files_off(tmp_path: Path) -> None:
    config = tmp_path / "off.toml"
    config.write_text("[export]\nbulk_files = false\n")
    output = tmp_path / "out"
    inputs = write_inputs(tmp_path / "in", **CATALOG, listings=_listings("2.00"))
    build(load_settings(config, input=inputs, output=output))
    assert not (output / "site" / BULK_DIR).exists()
    assert (output / "site" / "v1.39.0" / "pricing" / "group" / "10" / "index.json").is_file()
    assert os.path.isdir(output / "site" / "v1.39.0")


def test_an_unchanged_night_leaves_the_index_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without SOURCE_DATE_EPOCH, the index names the build that last changed a bulk file and
    that build's start: a night whose bulk files are all unchanged leaves it byte for byte (the
    previous release's file, hard-linked), at any hour; a night that changes one names
    itself."""
    monkeypatch.delenv(SOURCE_DATE_EPOCH)

    def night(name: str, price: str) -> tuple[dict[str, Any], bytes, int, dict[str, Any]]:
        output = _night(tmp_path, name, price)
        index = output / "site" / BULK_DIR / "index.json"
        report = orjson.loads((output / "build_report.json").read_bytes())
        body = index.read_bytes()
        return orjson.loads(body), body, index.stat().st_ino, report

    first, first_bytes, first_inode, first_report = night("a", "2.00")
    assert first["build"] == first_report["build_id"]
    assert first["builtAt"] == first_report["started_at"][:19] + "Z"
    _, second_bytes, second_inode, second_report = night("b", "2.00")
    assert second_report["build_id"] != first_report["build_id"]
    assert second_bytes == first_bytes and second_inode == first_inode
    third, _, third_inode, third_report = night("c", "2.50")
    assert third["build"] == third_report["build_id"] and third_inode != first_inode
    assert third["builtAt"] == third_report["started_at"][:19] + "Z"
