"""The store's other inventory operations (docs/contract.md §5): their paths, parameters, SQL
files, bind parameters and page names, shared by the server, the exporter, nginx and OpenAPI."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath

from pipeline.api.params import INT64, InventoryParams, parse_integer
from pipeline.api.urls import STORES_DIR, canonical_query


@dataclass(frozen=True)
class Operation:
    operation_id: str
    summary: str
    path: str  # under the store's folder; {productId} is the product's segment
    parameters: tuple[str, ...]  # the query parameters, in the official document's order
    sql: str  # the SQL file under sql/ (one SELECT of position, total_items, result_json)
    description: str
    paged: bool = True  # offset and limit; the envelope has totalItems
    materialised: bool = False  # the default pages of every store and channel are files

    @property
    def by_product(self) -> bool:
        return "{productId}" in self.path


_FLAGS = ("includeGeneric", "includeCustom")
_STORE = ("channelId", "includeExcludedCategories")
STORE_OPERATIONS: tuple[Operation, ...] = (
    Operation(
        "Stores_GetStoreProductSkus",
        "List Product SKUs",
        "inventory/products/{productId}/skus",
        (*_FLAGS, "offset", "limit", *_STORE),
        "api/store_product_skus",
        "Every matching SKU entry of the product, in the summary's SKU order (price descending, "
        "skuId, generic before custom, storePriceCustomId): what a client reads when skuCount "
        "exceeds skuLimit.",
    ),
    Operation(
        "Stores_GetInventoryProductQuantity",
        "Get Product Inventory Quantities",
        "inventory/products/{productId}/quantity",
        (*_FLAGS, *_STORE),
        "api/store_product_quantity",
        "One result: the product's total quantity and its matching entries' quantities, in the "
        "summary's SKU order.",
        paged=False,
    ),
    Operation(
        "Stores_GetInventorySkuPrices",
        "List SKU List Price",
        "inventory/skuprices",
        ("groupId", "skuId", *_FLAGS, *_STORE, "offset", "limit"),
        "api/store_skuprices",
        "The store's price list on the channel: every listing, whatever its quantity, by skuId, "
        "generic before custom, then storePriceCustomId.",
    ),
    Operation(
        "Stores_GetStoreGroups",
        "List All Groups",
        "inventory/groups",
        ("categoryId", "categoryName", *_STORE, "offset", "limit", "inStockOnly"),
        "api/store_groups",
        "The groups of the store's matching products, by name (case-insensitive), then groupId.",
        materialised=True,
    ),
    Operation(
        "Stores_GetStoreCategories",
        "List All Categories",
        "inventory/categories",
        (*_STORE, "offset", "limit", "inStockOnly"),
        "api/store_categories",
        "The categories of the store's matching products, by name (case-insensitive), then "
        "categoryId.",
        materialised=True,
    ),
)

_SEGMENT = "[^/]+"
# /v1.39.0/stores/{storeKey}/<operation path>: the store key, the product segment (or None).
OPERATION_PATHS = {
    op: re.compile(
        rf"/{re.escape(STORES_DIR)}/({_SEGMENT})/"
        + re.escape(op.path).replace(re.escape("{productId}"), f"({_SEGMENT})")
    )
    for op in STORE_OPERATIONS
}


def match(path: str) -> tuple[Operation, str, str | None] | None:
    """The operation a (normalised) path names, its store key and its product segment."""
    for op, pattern in OPERATION_PATHS.items():
        found = pattern.fullmatch(path)
        if found:
            return op, found.group(1), found.group(2) if op.by_product else None
    return None


def parse_product_id(segment: str | None) -> int | None:
    """The path's productId, an int64; None (a 400 naming it) when it is not one."""
    return None if segment is None else parse_integer(segment, INT64)


def page_path(op: Operation, store_key: str, params: InventoryParams) -> PurePosixPath:
    """A materialised page's file: the operation's folder, the canonical query or "index"."""
    return PurePosixPath(
        STORES_DIR, store_key.lower(), op.path, f"{canonical_query(params) or 'index'}.json"
    )
