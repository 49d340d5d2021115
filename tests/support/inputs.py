"""The inputs tests write: the base catalog and tiny tables as real files, and the shipped
sample's place."""

from __future__ import annotations

import csv
import json
import shutil
from decimal import Decimal
from pathlib import Path
from typing import Any

from pipeline.contract import TABLES_BY_NAME

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "data"

# A minimal valid catalog: one game, one set, two products, their SKUs and vocabularies.
BASE_TABLES: dict[str, list[dict[str, Any]]] = {
    "categories": [{"categoryId": 1, "name": "Magic"}],
    "groups": [{"groupId": 10, "categoryId": 1, "name": "Alpha"}],
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
            "name": "Black Lotus",
            "rarity": "Rare",
            "number": None,
        },
    ],
    "skus": [
        {"skuId": 1000, "productId": 100, "conditionId": 1, "languageId": 1, "printingId": 1},
        {"skuId": 1001, "productId": 100, "conditionId": 2, "languageId": 1, "printingId": 2},
        {"skuId": 1010, "productId": 101, "conditionId": 1, "languageId": 1, "printingId": 1},
    ],
    "conditions": [
        {"conditionId": 1, "name": "Near Mint"},
        {"conditionId": 2, "name": "Lightly Played"},
    ],
    "languages": [{"languageId": 1, "name": "English", "abbr": "EN"}],
    "printings": [
        {"printingId": 1, "name": "Normal", "foil": False},
        {"printingId": 2, "name": "Foil", "foil": True},
    ],
    "listings": [],
}


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return json.dumps(value)
    return str(value)


def write_table(input_dir: Path, table: str, rows: list[dict[str, Any]], fmt: str = "csv") -> Path:
    """Write one input table as CSV (all columns seen in `rows`) or NDJSON."""
    group = TABLES_BY_NAME[table].group
    path = input_dir / group / f"{table}.{fmt}"
    path.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "ndjson":
        path.write_text("".join(json.dumps(r, default=str) + "\n" for r in rows), encoding="utf-8")
        return path
    columns = (
        list(dict.fromkeys(k for r in rows for k in r)) or TABLES_BY_NAME[table].required_columns
    )
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(columns)
        for row in rows:
            writer.writerow([_cell(row.get(c)) for c in columns])
    return path


def write_inputs(input_dir: Path, **tables: list[dict[str, Any]]) -> Path:
    """The base catalog with some tables replaced or added; returns the input directory."""
    for name, rows in {**BASE_TABLES, **tables}.items():
        write_table(input_dir, name, rows)
    return input_dir


def raise_prices(listings: Path) -> None:
    """Every listing of a Seller Portal CSV one dollar dearer: its store's pages change."""
    with listings.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    for row in rows:
        row["TCG Marketplace Price"] = str(Decimal(row["TCG Marketplace Price"]) + 1)
    with listings.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def build_sample_nights(output: Path, work: Path) -> Path:
    """Two nights of the shipped sample into `output`: as shipped, then with every listing of
    the Seller Portal CSV (the store card-cellar) a dollar dearer. Returns `output`."""
    from pipeline.build import build
    from pipeline.settings import load_settings

    changed = work / "sample-changed"
    shutil.copytree(SAMPLE, changed, dirs_exist_ok=True)
    raise_prices(changed / "stores" / "listings" / "card-cellar.csv")
    for night in (SAMPLE, changed):
        build(load_settings(None, input=night, output=output))
    return output
