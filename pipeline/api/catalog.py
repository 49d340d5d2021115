"""The catalog and marketplace price operations (docs/contract.md §7): their paths, ids,
parameters, SQL files, messages and page names. An answer is a `page` (with totalItems), a
`list`, or `ids` (200, 207 with an error per id not found, or 404)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Literal

from pipeline.api.params import INT32, INT64, InventoryParams, invalid_value, parse_integer
from pipeline.api.responses import ApiError
from pipeline.api.urls import VERSION, canonical_query

MAX_IDS = 250
Form = Literal["page", "list", "ids"]
# The type of each path id: categories' are int32, every other id int64.
ID_RANGES = {
    "categoryId": INT32,
    "categoryIds": INT32,
    "groupId": INT64,
    "groupIds": INT64,
    "productId": INT64,
    "productIds": INT64,
    "skuIds": INT64,
}
_FILTERS = ("categoryId", "categoryName", "groupId", "groupName", "productName")
_PRODUCT_FLAGS = ("getExtendedFields", "includeSkus")


@dataclass(frozen=True)
class CatalogOperation:
    operation_id: str
    summary: str
    path: str  # under /v1.39.0/; at most one {id} segment
    form: Form
    sql: str  # the SQL file under sql/: rows of (position, total_items, item_id, result_json)
    none: str  # the 404 of an empty answer
    description: str
    parameters: tuple[str, ...] = ()  # the query parameters, in the official document's order
    missing: str = ""  # `ids`: the error of an id not found, `{id}` the id in plain decimal
    materialised: bool = False  # the pages of §7's defaults are files (`page_paths`)
    sortable: str = "category"  # what `sortOrder` names a field of (`params.SORTABLE`)

    @property
    def id_name(self) -> str | None:
        """The path id's name (`categoryId`, `productIds`, ...), None for a path with none."""
        found = re.search(r"\{(\w+)\}", self.path)
        return found.group(1) if found else None

    @property
    def pattern(self) -> re.Pattern[str]:
        """The operation's (normalised) path; the path id is the group."""
        return re.compile(
            rf"/{re.escape(VERSION)}/" + re.sub(r"\\\{\w+\\\}", "([^/]+)", re.escape(self.path))
        )


CATALOG_OPERATIONS: tuple[CatalogOperation, ...] = (
    CatalogOperation(
        "Catalog_GetCategoryGroups",
        "List All Category Groups",
        "catalog/categories/{categoryId}/groups",
        "page",
        "api/catalog_category_groups",
        "No groups were found.",
        "The category's groups, by name (case-insensitive, code-point order), then groupId.",
        ("offset", "limit"),
        materialised=True,
    ),
    CatalogOperation(
        "Catalog_GetCategoryConditions",
        "List Category Conditions",
        "catalog/categories/{categoryId}/conditions",
        "list",
        "api/catalog_category_conditions",
        "No conditions were found.",
        "The conditions of the SKUs of the category's products, in the order of "
        "catalog/conditions.",
        materialised=True,
    ),
    CatalogOperation(
        "Catalog_GetCategoryLanguages",
        "List Category Languages",
        "catalog/categories/{categoryId}/languages",
        "list",
        "api/catalog_category_languages",
        "No languages were found.",
        "The languages of the SKUs of the category's products, by languageId.",
        materialised=True,
    ),
    CatalogOperation(
        "Catalog_GetCategoryPrintings",
        "List Category Printings",
        "catalog/categories/{categoryId}/printings",
        "list",
        "api/catalog_category_printings",
        "No printings were found.",
        "The printings of the SKUs of the category's products, by displayOrder (nulls last), "
        "then printingId.",
        materialised=True,
    ),
    CatalogOperation(
        "Catalog_GetCategorySearchManifest",
        "Get Category Search Manifest",
        "catalog/categories/{categoryId}/search/manifest",
        "list",
        "api/catalog_search_manifest",
        "No categories were found.",
        "What the category's products can be searched and sorted by: the sorts, then the "
        "filters ProductName, SetName (the category's groups), Number and Rarity (its "
        "products' rarities), for POST catalog/categories/{categoryId}/search.",
        materialised=True,
    ),
    CatalogOperation(
        "Catalog_GetCategories_ByIds",
        "Get Category Details",
        "catalog/categories/{categoryIds}",
        "ids",
        "api/catalog_categories_by_ids",
        "No categories were found.",
        "The categories given, in the order first given.",
        missing="No category was found for categoryId {id}.",
    ),
    CatalogOperation(
        "Catalog_GetGroups",
        "List All Group Details",
        "catalog/groups",
        "page",
        "api/catalog_groups",
        "No groups were found.",
        "Every group, by the field sortOrder names (default name; text case-insensitive, in "
        "code-point order; a null first), descending with sortDesc=true, then groupId; "
        "hasSealed is accepted and ignored.",
        (
            "categoryId",
            "categoryName",
            "isSupplemental",
            "sortOrder",
            "sortDesc",
            "offset",
            "limit",
        ),
        sortable="group",
    ),
    CatalogOperation(
        "Catalog_GetGroups_ByIds",
        "Get Group Details",
        "catalog/groups/{groupIds}",
        "ids",
        "api/catalog_groups_by_ids",
        "No groups were found.",
        "The groups given, in the order first given.",
        missing="No group was found for groupId {id}.",
    ),
    CatalogOperation(
        "Catalog_GetProducts",
        "List All Products",
        "catalog/products",
        "page",
        "api/catalog_products",
        "No products were found.",
        "Products by name (case-insensitive, code-point order), then productId; "
        "productTypes is accepted and ignored.",
        (*_FILTERS, "getExtendedFields", "offset", "limit", "includeSkus"),
    ),
    CatalogOperation(
        "Catalog_GetProduct",
        "Get Product Details",
        "catalog/products/{productIds}",
        "ids",
        "api/catalog_products_by_ids",
        "No products were found.",
        "The products given, in the order first given.",
        _PRODUCT_FLAGS,
        missing="No product was found for productId {id}.",
    ),
    CatalogOperation(
        "Catalog_GetSkusByProductId",
        "List Product SKUs",
        "catalog/products/{productId}/skus",
        "list",
        "api/catalog_product_skus",
        "No SKUs were found.",
        "The product's SKUs, by skuId.",
    ),
    CatalogOperation(
        "Catalog_GetSkus",
        "Get SKU details",
        "catalog/skus/{skuIds}",
        "ids",
        "api/catalog_skus_by_ids",
        "No SKUs were found.",
        "The SKUs given, in the order first given.",
        missing="No SKU was found for skuId {id}.",
    ),
    CatalogOperation(
        "Catalog_GetConditions",
        "List Conditions",
        "catalog/conditions",
        "list",
        "api/catalog_conditions",
        "No conditions were found.",
        "Every condition, by displayOrder (nulls last), then conditionId.",
        materialised=True,
    ),
    CatalogOperation(
        "Pricing_GetGroupPrices",
        "List Product Market Prices by Group",
        "pricing/group/{groupId}",
        "list",
        "api/pricing_group",
        "No products were found.",
        "One entry per product of the group and printing of its SKUs, by productId then "
        "printingId: low, mid (the lower median) and high price of every store's market "
        "listings.",
        materialised=True,
    ),
    CatalogOperation(
        "Pricing_GetProductPrices",
        "List Product Market Prices",
        "pricing/product/{productIds}",
        "ids",
        "api/pricing_products",
        "No products were found.",
        "The entries of pricing/group for the products given, in the order first given, then "
        "by printingId; a product with no SKUs has no entry and no error.",
        missing="No product price was found for productId {id}.",
    ),
    CatalogOperation(
        "Pricing_GetProductConditionPrices",
        "List SKU Market Prices",
        "pricing/sku/{skuIds}",
        "ids",
        "api/pricing_skus",
        "No SKU market prices were found.",
        "The lowest market listing price of each SKU given, in the order first given.",
        missing="No SKU market price was found for skuId {id}.",
    ),
)


# The operations whose pages may be files (settings `export.catalog_operations`, all by default).
MATERIALISED_CATALOG = tuple(op.operation_id for op in CATALOG_OPERATIONS if op.materialised)


_PATTERNS = {op: op.pattern for op in CATALOG_OPERATIONS}


def match(path: str) -> tuple[CatalogOperation, str | None] | None:
    """The operation a (normalised) path names, and its path id's segment."""
    for op, pattern in _PATTERNS.items():
        found = pattern.fullmatch(path)
        if found:
            return op, found.group(1) if op.id_name else None
    return None


def parse_ids(name: str, segment: str) -> list[int]:
    """The path id (one, or a comma-separated list of 1 to MAX_IDS counted as given), or
    ApiError(400) naming it."""
    bounds = ID_RANGES[name]
    listed = name.endswith("Ids")
    parts = segment.split(",") if listed else [segment]
    ids = [parse_integer(part, bounds) for part in parts]
    if any(i is None for i in ids):
        raise ApiError(400, [invalid_value(name, segment)])
    if listed and not 1 <= len(ids) <= MAX_IDS:
        raise ApiError(400, [f"{name} must hold between 1 and {MAX_IDS} ids."])
    return [i for i in ids if i is not None]


def page_path(op: CatalogOperation, item_id: int | None, params: InventoryParams) -> PurePosixPath:
    """A materialised page's file: the operation's path with its id in plain decimal, then the
    canonical query (offset, limit) or `index`."""
    folder = op.path if item_id is None else re.sub(r"\{\w+\}", str(item_id), op.path)
    return PurePosixPath(VERSION, folder, f"{canonical_query(params) or 'index'}.json")
