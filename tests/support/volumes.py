"""Inputs of the volume guards' tests: 20 stores of 3 listings, and limits that compare them."""

from __future__ import annotations

from pathlib import Path

from pipeline.paths import CURRENT

SKUS = (1000, 1001, 1010)
STORES = [f"store{i:02}" for i in range(20)]
LISTINGS = [  # 60 listings, 20 stores of 3
    {"storeKey": store, "skuId": sku, "price": "1.00", "quantity": 1}
    for store in STORES
    for sku in SKUS
]
SMALL = {"volume": {"min_count": 10}}  # the default 1,000 would compare nothing this small


def published(output: Path) -> str:
    """The published release's name."""
    return (output / CURRENT).resolve().name
