"""Two nights' inputs for the Ray tests, and their one-machine builds: a generated input
("same"), and a copy of it where some stores changed a price ("changed")."""

from __future__ import annotations

import shutil
from collections.abc import Set
from pathlib import Path

import polars as pl
import pytest

from pipeline.build import build
from pipeline.settings import load_settings
from pipeline.tools.generate import generate

Nights = dict[str, tuple[Path, Path]]  # "same"/"changed" -> (input, its one-machine output)


def two_nights(
    tmp_path_factory: pytest.TempPathFactory,
    name: str,
    stores: int,
    listings: int,
    changed_stores: Set[str],
) -> Nights:
    """A generated input of `stores` and `listings`, and a copy in which every listing of
    `changed_stores` costs a unit more (its file's columns of the same types); each built on
    one machine."""
    same = tmp_path_factory.mktemp(f"{name}-same")
    generate(same, stores=stores, listings=listings, seed=7)
    changed = tmp_path_factory.mktemp(f"{name}-changed")
    shutil.copytree(same, changed, dirs_exist_ok=True)
    listings_file = changed / "stores" / "listings" / "part-000.parquet"
    rows = pl.read_parquet(listings_file)
    assert rows.filter(pl.col("storeKey").is_in(changed_stores)).height > 0
    rows = rows.with_columns(  # in the column's own type, as the next night's export has it
        price=pl.when(pl.col("storeKey").is_in(changed_stores))
        .then(pl.col("price") + pl.lit(1, pl.Decimal(12, 2)))
        .otherwise(pl.col("price"))
        .cast(rows.schema["price"])
    )
    rows.write_parquet(listings_file)
    built = {}
    for night, inputs in (("same", same), ("changed", changed)):
        one_machine = tmp_path_factory.mktemp(f"{name}-one-{night}")
        build(load_settings(None, input=inputs, output=one_machine))
        built[night] = (inputs, one_machine)
    return built
