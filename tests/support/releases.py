"""Three tiny releases for the publish tests that place a fault at every request: a dozen
files a release, so that a fault at every request of a publish costs a few dozen publishes."""

from __future__ import annotations

from pathlib import Path

from pipeline.build import build
from pipeline.publish.release import built_before
from pipeline.settings import load_settings
from tests.support.inputs import write_inputs

# Each store's default pages and the common pages. No catalog or price page and no bulk file:
# common pages as the category listing is. A group's or a category's version in the bucket is
# published by the code that publishes a store's (tests/publish/test_one_price.py counts them);
# each one here would add about a dozen publishes to every test that kills at every request.
PAGES = {
    "channels": [0],
    "limits": [100],
    "variants": [],
    "category_limits": [100],
    "catalog_operations": [],
    "bulk_files": False,
}


def _listings(
    store: str, price: str = "1.00", skus: tuple[int, ...] = (1000, 1001, 1010)
) -> list[dict[str, object]]:
    return [{"storeKey": store, "skuId": s, "price": price, "quantity": 1} for s in skus]


# Three inputs of three stores (three pages each): "kept" never changes; "dearer" has its
# prices raised in b and is gone in c; "cut" loses listings in c. A publish of one over another
# keeps a store's versions, adds new ones and leaves old ones to collect.
INPUTS = {
    "a": [*_listings("kept"), *_listings("dearer"), *_listings("cut")],
    "b": [*_listings("kept"), *_listings("dearer", "2.00"), *_listings("cut")],
    "c": [*_listings("kept"), *_listings("cut", skus=(1000,))],
}


def build_three_releases(folder: Path) -> dict[str, Path]:
    """The releases of INPUTS, each built into an output of its own under `folder`, in order:
    each is a newer build than the one before."""
    made = {}
    for name, listings in INPUTS.items():
        inputs = write_inputs(folder / f"in-{name}", listings=listings)
        settings = load_settings(None, input=inputs, output=folder / name, export=PAGES)
        made[name] = build(settings).release
    assert built_before(made["a"].name, made["b"].name)
    assert built_before(made["b"].name, made["c"].name)
    return made
