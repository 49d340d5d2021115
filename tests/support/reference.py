"""An independent reference model of docs/contract.md, in plain Python, for the tests.

It shares no code with the pipeline: it reads plain dictionaries, filters, groups, sorts and
serialises with the standard library (prices via float repr, JSON via `json.dumps`), so that a
disagreement points at a bug in one of the two.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")


@dataclass(repr=False)  # a failing example's report names the request, not the data
class Data:
    """The accepted rows. Not changed once asked: the indexes of them that every request
    reads (`index`) are made on the first."""

    categories: dict[int, dict[str, Any]] = field(default_factory=dict)  # id -> row
    groups: dict[int, dict[str, Any]] = field(default_factory=dict)
    products: dict[int, dict[str, Any]] = field(default_factory=dict)
    skus: dict[int, dict[str, Any]] = field(default_factory=dict)
    conditions: dict[int, str] = field(default_factory=dict)
    languages: dict[int, tuple[str, str | None]] = field(default_factory=dict)
    printings: dict[int, bool] = field(default_factory=dict)
    stores: set[str] = field(default_factory=set)  # from the stores file, lower-case
    excluded: set[tuple[str, int, int]] = field(default_factory=set)  # (store, channel, category)
    listings: list[dict[str, Any]] = field(default_factory=list)  # canonical listing rows
    # The catalog operations' objects: a category as the category listing writes it, a
    # condition and a printing with every key of their catalog shapes.
    category_objects: dict[int, dict[str, Any]] = field(default_factory=dict)
    condition_rows: dict[int, dict[str, Any]] = field(default_factory=dict)
    printing_rows: dict[int, dict[str, Any]] = field(default_factory=dict)
    _indexes: dict[str, Any] = field(default_factory=dict, init=False, compare=False)

    def index(self, name: str, make: Callable[[Data], T]) -> T:
        """`make(self)`, made once (the rows are not changed once asked)."""
        if name not in self._indexes:
            self._indexes[name] = make(self)
        return self._indexes[name]  # type: ignore[no-any-return]

    def known_stores(self) -> set[str]:
        return self.index(
            "known_stores", lambda d: d.stores | {row["storeKey"].lower() for row in d.listings}
        )

    def store_listings(self, store: str) -> list[dict[str, Any]]:
        """The listings of the store (lower-case key), in the listings' order."""
        return self.index("store_listings", _listings_by_store).get(store, [])


def _listings_by_store(data: Data) -> dict[str, list[dict[str, Any]]]:
    found: dict[str, list[dict[str, Any]]] = {}
    for row in data.listings:
        found.setdefault(row["storeKey"].lower(), []).append(row)
    return found


@dataclass(frozen=True)
class Request:
    categoryId: int | None = None
    categoryName: str | None = None
    groupId: int | None = None
    groupName: str | None = None
    productName: str | None = None
    skuLimit: int = 3
    sort: str | None = None  # raw sort value; None: price desc
    includeGeneric: bool = True
    includeCustom: bool = True
    channelId: int = 0
    includeExcludedCategories: bool = False
    offset: int = 0
    limit: int = 10


def fold(text: str) -> str:
    """Unicode lower-casing, one character at a time (the simple case mapping)."""
    return "".join(c.lower() if len(c.lower()) == 1 else c for c in text)


def _money(value: Decimal) -> float:
    return float(value)


def _entry(data: Data, row: dict[str, Any]) -> dict[str, Any]:
    sku = data.skus[row["skuId"]]
    language = data.languages.get(sku["languageId"])
    entry: dict[str, Any] = {"skuId": row["skuId"]}
    if row["isCustom"]:
        entry["storePriceCustomId"] = row["storePriceCustomId"]
    entry["condition"] = {
        "conditionId": sku["conditionId"],
        "name": data.conditions.get(sku["conditionId"]),
    }
    entry["language"] = {
        "languageId": sku["languageId"],
        "name": language[0] if language else None,
        "abbr": language[1] if language else None,
    }
    entry["foil"] = data.printings.get(sku["printingId"], False)
    entry["price"] = _money(row["price"])
    entry["quantity"] = row["quantity"]
    entry["isFeatured"] = row.get("isFeatured")
    entry["isCustom"] = row["isCustom"]
    if row["isCustom"]:
        entry["title"] = row.get("title")
        entry["description"] = row.get("description")
        entry["mainImageUrl"] = row.get("mainImageUrl")
        entry["additionalImageUrls"] = row.get("additionalImageUrls") or []
    return entry


def products_for(data: Data, store: str, req: Request) -> list[dict[str, Any]]:
    """Every matching StoreProduct of the store, in the answer's order (before paging)."""
    store = store.lower()
    by_product: dict[int, list[dict[str, Any]]] = {}
    for row in data.store_listings(store):
        if row["channelId"] != req.channelId:
            continue
        if row["quantity"] <= 0:
            continue
        if (row["isCustom"] and not req.includeCustom) or (
            not row["isCustom"] and not req.includeGeneric
        ):
            continue
        product = data.products[data.skus[row["skuId"]]["productId"]]
        category = data.categories[product["categoryId"]]
        group = data.groups[product["groupId"]]
        if (
            store,
            req.channelId,
            product["categoryId"],
        ) in data.excluded and not req.includeExcludedCategories:
            continue
        if req.categoryId is not None and product["categoryId"] != req.categoryId:
            continue
        if req.categoryName is not None and fold(category["name"]) != fold(req.categoryName):
            continue
        if req.groupId is not None and product["groupId"] != req.groupId:
            continue
        if req.groupName is not None and fold(group["name"]) != fold(req.groupName):
            continue
        if req.productName is not None and fold(req.productName) not in fold(product["name"]):
            continue
        by_product.setdefault(product["productId"], []).append(row)

    summaries = []
    for product_id, rows in by_product.items():
        product = data.products[product_id]
        rows.sort(
            key=lambda r: (-r["price"], r["skuId"], r["isCustom"], r.get("storePriceCustomId") or 0)
        )
        summaries.append(
            {
                "productId": product_id,
                "name": product["name"],
                "category": data.categories[product["categoryId"]]["name"],
                "group": data.groups[product["groupId"]]["name"],
                "rarity": product.get("rarity"),
                "number": product.get("number"),
                "skuCount": len(rows),
                "lowestPrice": min(r["price"] for r in rows),
                "skus": [_entry(data, r) for r in rows[: req.skuLimit]],
            }
        )

    field_name, descending = parse_sort(req.sort)
    if field_name == "price":
        summaries.sort(key=lambda p: p["productId"])
        summaries.sort(key=lambda p: p["lowestPrice"], reverse=descending)
    else:
        summaries.sort(key=lambda p: p["productId"])
        summaries.sort(key=lambda p: fold(p["name"]), reverse=descending)
    for summary in summaries:
        summary["lowestPrice"] = _money(summary["lowestPrice"])
    return summaries


def parse_sort(sort: str | None) -> tuple[str, bool]:
    if sort is None:
        return "price", True
    words = [w for w in sort.strip(" \t\r\n\f\v").lower().split(" ") if w]
    field_name = {"price": "price", "minprice": "price", "name": "name", "productname": "name"}[
        words[0]
    ]
    return field_name, len(words) == 2 and words[1] == "desc"


def dumps(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def answer(data: Data, store: str, req: Request) -> tuple[int, bytes]:
    """(status, body) of the inventory operation for a request with valid parameters."""
    if store.lower() not in data.known_stores():
        return 404, dumps({"success": False, "errors": ["No stores were found."], "results": []})
    products = products_for(data, store, req)
    page = products[req.offset : req.offset + req.limit]
    if not page:
        return 404, dumps({"success": False, "errors": ["No products were found."], "results": []})
    return 200, dumps({"totalItems": len(products), "success": True, "errors": [], "results": page})


# ---------------------------------------------------------------------------------------------
# Reading an input directory (CSV, NDJSON, Parquet) into Data, with the standard library and
# pyarrow only, for checking the pipeline's output on the shipped sample.
# ---------------------------------------------------------------------------------------------


def _read_rows(folder: Path, name: str) -> list[dict[str, Any]]:
    import csv

    import pyarrow.parquet as pq

    files = sorted(folder.glob(f"{name}.*")) + sorted(folder.glob(f"{name}/*"))
    out: list[dict[str, Any]] = []
    for file in files:
        if file.suffix == ".csv":
            with file.open(encoding="utf-8", newline="") as fh:
                records = [
                    {k: (v if v != "" else None) for k, v in r.items()} for r in csv.DictReader(fh)
                ]
            if records and "TCGplayer Id" in records[0]:  # a Seller Portal export of store <stem>
                for r in records:
                    for channel, qty, price in (
                        (0, "Total Quantity", "TCG Marketplace Price"),
                        (1, "My Store Reserve Quantity", "My Store Price"),
                    ):
                        if r.get(qty) not in (None, "0"):
                            out.append(
                                {
                                    "storeKey": file.stem,
                                    "channelId": channel,
                                    "skuId": r["TCGplayer Id"],
                                    "price": r[price],
                                    "quantity": r[qty],
                                }
                            )
            else:
                out += records
        elif file.suffix == ".json":  # a catalog API page
            for item in json.loads(file.read_text(encoding="utf-8"))["results"]:
                extended = {e["name"]: e["value"] for e in item.get("extendedData") or []}
                out.append(
                    {**item, "rarity": extended.get("Rarity"), "number": extended.get("Number")}
                )
        elif file.suffix in (".ndjson", ".jsonl"):
            out += [
                json.loads(line)
                for line in file.read_text(encoding="utf-8").splitlines()
                if line.strip()
            ]
        elif file.suffix == ".parquet":
            out += pq.read_table(file).to_pylist()
    return out


def _int(v: Any) -> int | None:
    return None if v is None else int(v)


def _bool(v: Any, default: bool | None = None) -> bool | None:
    if v is None:
        return default
    if isinstance(v, bool):
        return v
    return str(v).strip().lower() in ("true", "1")


def time_text(value: Any) -> str | None:
    """A time as the live service writes it: ISO 8601, no zone, seconds always, then the
    fraction without its trailing zeros, and no dot when it is zero."""
    if value is None:
        return None
    from datetime import datetime

    moment = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    fraction = f"{moment.microsecond:06d}".rstrip("0")
    return moment.strftime("%Y-%m-%dT%H:%M:%S") + (f".{fraction}" if fraction else "")


# The optional catalog columns that the catalog operations publish, by table.
CATALOG_COLUMNS = {
    "products": (
        "cleanName",
        "imageUrl",
        "url",
        "modifiedOn",
        "imageCount",
        "presaleInfo",
        "extendedData",
    ),
    "printings": ("displayOrder", "modifiedOn"),
}
# The category listing's live-only keys: on every category when the input has their column.
KEYED_CATEGORY_COLUMNS = ("categoryDescription", "categoryPageTitle", "isDirect")


def _nested(value: Any) -> Any:
    """An object or list as the input gives it: JSON text (CSV, NDJSON) or nested (NDJSON,
    Parquet, a catalog API dump)."""
    return json.loads(value) if isinstance(value, str) else value


def _presale(value: Any) -> dict[str, Any] | None:
    info = _nested(value)
    if info is None:
        return None
    return {
        "isPresale": _bool(info.get("isPresale")),
        "releasedOn": time_text(info.get("releasedOn")),
        "note": info.get("note"),
    }


def _extended(value: Any) -> list[dict[str, Any]] | None:
    entries = _nested(value)
    if entries is None:
        return None
    return [
        {"name": e.get("name"), "displayName": e.get("displayName"), "value": e.get("value")}
        for e in entries
    ]


def _category_object(r: dict[str, Any], keyed: set[str]) -> dict[str, Any]:
    """A category as the category listing writes it: the live-only keys where `keyed`."""
    obj: dict[str, Any] = {
        "categoryId": int(r["categoryId"]),
        "name": r["name"],
        "modifiedOn": time_text(r.get("modifiedOn")),
        "displayName": r.get("displayName"),
        "seoCategoryName": r.get("seoCategoryName"),
    }
    for name in ("categoryDescription", "categoryPageTitle"):
        if name in keyed:
            obj[name] = r.get(name)
    obj.update(
        sealedLabel=r.get("sealedLabel"),
        nonSealedLabel=r.get("nonSealedLabel"),
        conditionGuideUrl=r.get("conditionGuideUrl"),
        isScannable=_bool(r.get("isScannable")),
        popularity=_int(r.get("popularity")),
    )
    if "isDirect" in keyed:
        obj["isDirect"] = _bool(r.get("isDirect"))
    return obj


def load_directory(input_dir: Path) -> Data:
    """The accepted content of a valid input directory (no rejects expected)."""
    catalog, stores = input_dir / "catalog", input_dir / "stores"
    data = Data()

    category_rows = _read_rows(catalog, "categories")
    keyed = {k for r in category_rows for k in r if k in KEYED_CATEGORY_COLUMNS}
    for r in category_rows:
        data.categories[int(r["categoryId"])] = {
            "categoryId": int(r["categoryId"]),
            "name": r["name"],
        }
        data.category_objects[int(r["categoryId"])] = _category_object(r, keyed)
    for r in _read_rows(catalog, "groups"):
        data.groups[int(r["groupId"])] = {
            "groupId": int(r["groupId"]),
            "name": r["name"],
            "categoryId": int(r["categoryId"]),
            "abbreviation": r.get("abbreviation"),
            "isSupplemental": _bool(r.get("isSupplemental")),
            "publishedOn": time_text(r.get("publishedOn")),
            "modifiedOn": time_text(r.get("modifiedOn")),
        }
    for r in _read_rows(catalog, "products"):
        data.products[int(r["productId"])] = {
            "productId": int(r["productId"]),
            "categoryId": int(r["categoryId"]),
            "groupId": int(r["groupId"]),
            "name": r["name"],
            "rarity": r.get("rarity"),
            "number": r.get("number"),
            "cleanName": r.get("cleanName"),
            "imageUrl": r.get("imageUrl"),
            "url": r.get("url"),
            "modifiedOn": time_text(r.get("modifiedOn")),
            "imageCount": _int(r.get("imageCount")),
            "presaleInfo": _presale(r.get("presaleInfo")),
            "extendedData": _extended(r.get("extendedData")),
        }
    for r in _read_rows(catalog, "skus"):
        data.skus[int(r["skuId"])] = {k: int(v) for k, v in r.items()}
    for r in _read_rows(catalog, "conditions"):
        data.conditions[int(r["conditionId"])] = r["name"]
        data.condition_rows[int(r["conditionId"])] = {
            "conditionId": int(r["conditionId"]),
            "name": r["name"],
            "abbreviation": r.get("abbreviation"),
            "displayOrder": _int(r.get("displayOrder")),
        }
    data.languages = {
        int(r["languageId"]): (r["name"], r.get("abbr")) for r in _read_rows(catalog, "languages")
    }
    for r in _read_rows(catalog, "printings"):
        data.printings[int(r["printingId"])] = bool(_bool(r.get("foil"), False))
        data.printing_rows[int(r["printingId"])] = {
            "printingId": int(r["printingId"]),
            "name": r["name"],
            "displayOrder": _int(r.get("displayOrder")),
            "modifiedOn": time_text(r.get("modifiedOn")),
        }
    data.stores = {r["storeKey"].lower() for r in _read_rows(stores, "stores")}
    data.excluded = {
        (r["storeKey"].lower(), _int(r.get("channelId")) or 0, int(r["categoryId"]))
        for r in _read_rows(stores, "excluded_categories")
    }
    for r in _read_rows(stores, "listings"):
        urls = r.get("additionalImageUrls")
        data.listings.append(
            {
                "storeKey": r["storeKey"],
                "channelId": _int(r.get("channelId")) or 0,
                "skuId": int(r["skuId"]),
                "price": Decimal(str(r["price"])),
                "quantity": int(r["quantity"]),
                "isFeatured": _bool(r.get("isFeatured")),
                "isCustom": bool(_bool(r.get("isCustom"), False)),
                "storePriceCustomId": _int(r.get("storePriceCustomId")),
                "title": r.get("title"),
                "description": r.get("description"),
                "mainImageUrl": r.get("mainImageUrl"),
                "additionalImageUrls": json.loads(urls) if isinstance(urls, str) else urls,
            }
        )
    return data


# ---------------------------------------------------------------------------------------------
# Query strings, per docs/contract.md §9, written independently.
# ---------------------------------------------------------------------------------------------

SPEC_ORDER = [
    ("categoryId", "int32"),
    ("categoryName", "str"),
    ("groupId", "int64"),
    ("groupName", "str"),
    ("productName", "str"),
    ("skuLimit", "int32"),
    ("sort", "sort"),
    ("includeGeneric", "bool"),
    ("includeCustom", "bool"),
    ("channelId", "int32"),
    ("includeExcludedCategories", "bool"),
    ("offset", "int32"),
    ("limit", "int32"),
]


def parse_query(query: str) -> Request | list[str]:
    """A Request, or the list of 400 messages."""
    from urllib.parse import unquote_plus

    first: dict[str, str] = {}
    for part in query.split("&"):
        if part:
            name, _, value = part.partition("=")
            first.setdefault(unquote_plus(name).lower(), unquote_plus(value))
    values: dict[str, Any] = {}
    errors: list[str] = []
    for name, kind in SPEC_ORDER:
        if name.lower() not in first:
            continue
        raw = first[name.lower()]
        bad = f"The value '{raw}' is not valid for {name}."
        if kind in ("int32", "int64"):
            if not _is_int(raw, 31 if kind == "int32" else 63):
                errors.append(bad)
            else:
                values[name] = _int_of(raw)
        elif kind == "bool":
            if raw.lower() in ("true", "false"):
                values[name] = raw.lower() == "true"
            else:
                errors.append(bad)
        elif kind == "sort":
            trimmed = raw.strip(" \t\r\n\f\v")
            words = [w for w in trimmed.split(" ") if w]
            if any(not w.isascii() or not w.isalpha() for w in words):
                words = []
            fields = ("price", "minprice", "name", "productname")
            if (
                1 <= len(words) <= 2
                and words[0].lower() in fields
                and (len(words) == 1 or words[1].lower() in ("asc", "desc"))
            ):
                values[name] = raw
            else:
                errors.append(
                    f"The value '{raw}' is not valid for sort. Use price, minprice, name or "
                    "productname, optionally followed by asc or desc."
                )
        elif raw:
            values[name] = raw
    if values.get("offset", 0) < 0:
        errors.append("offset must be greater than or equal to 0.")
    if not 1 <= values.get("limit", 10) <= 100:
        errors.append("limit must be between 1 and 100.")
    if values.get("skuLimit", 0) < 0:
        errors.append("skuLimit must be greater than or equal to 0.")
    return errors or Request(**values)


def answer_url(data: Data, path: str, query: str) -> tuple[int, bytes]:
    """(status, body) for GET path?query on the inventory operation."""
    import re

    match = re.fullmatch(r"/v1\.39\.0/stores/([^/]+)/inventory/products/?", path)
    if not match:
        return 404, dumps({"success": False, "errors": ["URL not found."], "results": []})
    parsed = parse_query(query)
    if isinstance(parsed, list):
        return 400, dumps({"success": False, "errors": parsed, "results": []})
    return answer(data, match.group(1), parsed)


# ---------------------------------------------------------------------------------------------
# The store's other inventory operations (docs/contract.md §5), written from the contract alone.
# ---------------------------------------------------------------------------------------------

OPERATION_SPECS: dict[str, list[tuple[str, str]]] = {
    "skus": [
        ("includeGeneric", "bool"),
        ("includeCustom", "bool"),
        ("offset", "int32"),
        ("limit", "int32"),
        ("channelId", "int32"),
        ("includeExcludedCategories", "bool"),
    ],
    "quantity": [
        ("includeGeneric", "bool"),
        ("includeCustom", "bool"),
        ("channelId", "int32"),
        ("includeExcludedCategories", "bool"),
    ],
    "skuprices": [
        ("groupId", "int64"),
        ("skuId", "int64"),
        ("includeGeneric", "bool"),
        ("includeCustom", "bool"),
        ("channelId", "int32"),
        ("includeExcludedCategories", "bool"),
        ("offset", "int32"),
        ("limit", "int32"),
    ],
    "groups": [
        ("categoryId", "int32"),
        ("categoryName", "str"),
        ("channelId", "int32"),
        ("includeExcludedCategories", "bool"),
        ("offset", "int32"),
        ("limit", "int32"),
        ("inStockOnly", "bool"),
    ],
    "categories": [
        ("channelId", "int32"),
        ("includeExcludedCategories", "bool"),
        ("offset", "int32"),
        ("limit", "int32"),
        ("inStockOnly", "bool"),
    ],
}
OPERATION_DEFAULTS: dict[str, Any] = {
    "includeGeneric": True,
    "includeCustom": True,
    "includeExcludedCategories": False,
    "inStockOnly": True,
    "channelId": 0,
    "getExtendedFields": False,
    "includeSkus": False,
    "offset": 0,
    "limit": 10,
}


def _int_of(raw: str) -> int:
    """A decimal's value, however many its leading zeros (int() refuses over 4300 digits)."""
    sign = -1 if raw.startswith("-") else 1
    return sign * int(raw.removeprefix("-").lstrip("0") or "0")


def _is_int(raw: str, bits: int) -> bool:
    """Plain decimal, an optional `-`, any leading zeros, within the signed type of `bits`."""
    digits = raw[1:] if raw.startswith("-") else raw
    return (
        bool(digits)
        and all("0" <= c <= "9" for c in digits)
        and len(digits.lstrip("0")) <= 19  # no int64 has more digits
        and -(2**bits) <= _int_of(raw) < 2**bits
    )


def parse_operation_query(spec: list[tuple[str, str]], query: str) -> dict[str, Any] | list[str]:
    """The operation's parameters (defaults filled in), or the list of 400 messages."""
    from urllib.parse import unquote_plus

    first: dict[str, str] = {}
    for part in query.split("&"):
        if part:
            name, _, value = part.partition("=")
            first.setdefault(unquote_plus(name).lower(), unquote_plus(value))
    values: dict[str, Any] = {n: OPERATION_DEFAULTS.get(n) for n, _ in spec}
    errors: list[str] = []
    for name, kind in spec:
        if name.lower() not in first:
            continue
        raw = first[name.lower()]
        if kind in ("int32", "int64"):
            if _is_int(raw, 31 if kind == "int32" else 63):
                values[name] = _int_of(raw)
            else:
                errors.append(f"The value '{raw}' is not valid for {name}.")
        elif kind == "bool":
            if raw.lower() in ("true", "false"):
                values[name] = raw.lower() == "true"
            else:
                errors.append(f"The value '{raw}' is not valid for {name}.")
        elif kind == "group_field" and raw:  # a field of the group, named in any case
            field = {f.lower(): f for f in GROUP_FIELDS}.get(raw.lower())
            if field is None:
                errors.append(
                    f"The value '{raw}' is not valid for {name}. Use a field of the group: "
                    + ", ".join(GROUP_FIELDS)
                    + "."
                )
            values[name] = field
        elif raw:
            values[name] = raw
    if "offset" in values and values["offset"] < 0:
        errors.append("offset must be greater than or equal to 0.")
    if "limit" in values and not 1 <= values["limit"] <= 100:
        errors.append("limit must be between 1 and 100.")
    return errors or values


def _listings_of(data: Data, store: str, p: dict[str, Any], in_stock: bool) -> list[dict[str, Any]]:
    """The store's listings on the channel that the flags let through."""
    out = []
    for row in data.store_listings(store):
        if row["channelId"] != p["channelId"]:
            continue
        if in_stock and row["quantity"] <= 0:
            continue
        if not p.get("includeCustom", True) and row["isCustom"]:
            continue
        if not p.get("includeGeneric", True) and not row["isCustom"]:
            continue
        product = data.products[data.skus[row["skuId"]]["productId"]]
        excluded = (store, p["channelId"], product["categoryId"]) in data.excluded
        if excluded and not p["includeExcludedCategories"]:
            continue
        out.append(row)
    return out


def _sku_order(row: dict[str, Any]) -> tuple[Any, ...]:
    return (-row["price"], row["skuId"], row["isCustom"], row.get("storePriceCustomId") or 0)


def _custom_keys(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "title": row.get("title"),
        "description": row.get("description"),
        "mainImageUrl": row.get("mainImageUrl"),
        "additionalImageUrls": row.get("additionalImageUrls") or [],
    }


def _quantity_entry(row: dict[str, Any]) -> dict[str, Any]:
    entry: dict[str, Any] = {"skuId": row["skuId"]}
    if row["isCustom"]:
        entry["storePriceCustomId"] = row["storePriceCustomId"]
    entry.update(quantity=row["quantity"], isCustom=row["isCustom"])
    if row["isCustom"]:
        entry.update(_custom_keys(row))
    return entry


def _price_entry(row: dict[str, Any]) -> dict[str, Any]:
    custom = row["isCustom"]
    key = f"{row['skuId']}-{row['storePriceCustomId']}" if custom else str(row["skuId"])
    entry: dict[str, Any] = {"skuListPriceId": key, "skuId": row["skuId"]}
    if custom:
        entry["storePriceCustomId"] = row["storePriceCustomId"]
    entry.update(price=_money(row["price"]), isCustom=custom)
    if custom:
        entry.update(_custom_keys(row))
    return entry


def _group_object(group: dict[str, Any]) -> dict[str, Any]:
    return {
        "groupId": group["groupId"],
        "name": group["name"],
        "abbreviation": group.get("abbreviation"),
        "isSupplemental": group.get("isSupplemental"),
        "publishedOn": time_text(group.get("publishedOn")),
        "modifiedOn": time_text(group.get("modifiedOn")),
        "categoryId": group["categoryId"],
    }


def operation_results(
    data: Data, operation: str, store: str, product_id: int | None, p: dict[str, Any]
) -> list[dict[str, Any]]:
    """Every result of the operation (before paging), in its order."""
    product_of = data.index("product_of", lambda d: {s: d.skus[s]["productId"] for s in d.skus})
    if operation in ("skus", "quantity"):
        rows = sorted(
            (r for r in _listings_of(data, store, p, True) if product_of[r["skuId"]] == product_id),
            key=_sku_order,
        )
        if operation == "skus":
            return [_entry(data, r) for r in rows]
        if not rows:
            return []
        skus = [_quantity_entry(r) for r in rows]
        return [
            {
                "productId": product_id,
                "totalQuantity": sum(r["quantity"] for r in rows),
                "skus": skus,
            }
        ]
    if operation == "skuprices":
        rows = [
            r
            for r in _listings_of(data, store, p, False)
            if (
                p["groupId"] is None
                or data.products[product_of[r["skuId"]]]["groupId"] == p["groupId"]
            )
            and (p["skuId"] is None or r["skuId"] == p["skuId"])
        ]
        rows.sort(key=lambda r: (r["skuId"], r["isCustom"], r.get("storePriceCustomId") or 0))
        return [_price_entry(r) for r in rows]
    products = [
        data.products[product_of[r["skuId"]]]
        for r in _listings_of(data, store, p, p["inStockOnly"])
    ]
    if operation == "categories":
        found = {
            data.categories[pr["categoryId"]]["categoryId"]: data.categories[pr["categoryId"]]
            for pr in products
        }
        ordered = sorted(found.values(), key=lambda c: (fold(c["name"]), c["categoryId"]))
        return [{"categoryId": c["categoryId"], "name": c["name"]} for c in ordered]
    category_name = p["categoryName"]
    groups = {
        pr["groupId"]: data.groups[pr["groupId"]]
        for pr in products
        if (p["categoryId"] is None or pr["categoryId"] == p["categoryId"])
        and (
            category_name is None
            or fold(data.categories[pr["categoryId"]]["name"]) == fold(category_name)
        )
    }
    return [
        _group_object(g)
        for g in sorted(groups.values(), key=lambda g: (fold(g["name"]), g["groupId"]))
    ]


def answer_operation(data: Data, path: str, query: str) -> tuple[int, bytes] | None:
    """(status, body) for GET path?query on one of the store's other operations; None for a
    path that is none of them."""
    import re

    match = re.fullmatch(
        r"/v1\.39\.0/stores/([^/]+)/inventory/"
        r"(?:products/([^/]+)/(skus|quantity)|(skuprices|categories|groups))/?",
        path,
    )
    if not match:
        return None
    store, segment = match.group(1), match.group(2)
    operation = match.group(3) or match.group(4)
    errors: list[str] = []
    if segment is not None and not _is_int(segment, 63):
        errors.append(f"The value '{segment}' is not valid for productId.")
    parsed = parse_operation_query(OPERATION_SPECS[operation], query)
    if isinstance(parsed, list):
        errors += parsed
    if errors:
        return 400, dumps({"success": False, "errors": errors, "results": []})
    assert isinstance(parsed, dict)
    if store.lower() not in data.known_stores():
        return 404, dumps({"success": False, "errors": ["No stores were found."], "results": []})
    product_id = None if segment is None else _int_of(segment)
    results = operation_results(data, operation, store.lower(), product_id, parsed)
    if operation == "quantity":
        page = results
    else:
        page = results[parsed["offset"] : parsed["offset"] + parsed["limit"]]
    if not page:
        return 404, dumps({"success": False, "errors": ["No products were found."], "results": []})
    if operation == "quantity":
        return 200, dumps({"success": True, "errors": [], "results": page})
    return 200, dumps({"totalItems": len(results), "success": True, "errors": [], "results": page})


# ---------------------------------------------------------------------------------------------
# The catalog and marketplace price operations (docs/contract.md), from the contract alone.
# ---------------------------------------------------------------------------------------------

MAX_IDS = 250
_PAGING = [("offset", "int32"), ("limit", "int32")]
_PRODUCT_FLAGS = [("getExtendedFields", "bool"), ("includeSkus", "bool")]


@dataclass(frozen=True)
class CatalogOp:
    """One operation: its path under /v1.39.0/ (`{}` the path id), the path id's name, its
    query parameters in the official document's order, and its messages."""

    path: str
    id_name: str | None
    parameters: list[tuple[str, str]]
    none: str
    missing: str = ""  # an id list's error for an id not found


CATALOG_OPS: dict[str, CatalogOp] = {
    "category_groups": CatalogOp(
        "catalog/categories/{}/groups", "categoryId", _PAGING, "No groups were found."
    ),
    "category_conditions": CatalogOp(
        "catalog/categories/{}/conditions", "categoryId", [], "No conditions were found."
    ),
    "category_languages": CatalogOp(
        "catalog/categories/{}/languages", "categoryId", [], "No languages were found."
    ),
    "category_printings": CatalogOp(
        "catalog/categories/{}/printings", "categoryId", [], "No printings were found."
    ),
    "categories": CatalogOp(
        "catalog/categories/{}",
        "categoryIds",
        [],
        "No categories were found.",
        "No category was found for categoryId {}.",
    ),
    "all_groups": CatalogOp(
        "catalog/groups",
        None,
        [
            ("categoryId", "int32"),
            ("categoryName", "str"),
            ("isSupplemental", "bool"),
            ("sortOrder", "group_field"),
            ("sortDesc", "bool"),
            ("offset", "int32"),
            ("limit", "int32"),
        ],
        "No groups were found.",
    ),
    "groups": CatalogOp(
        "catalog/groups/{}",
        "groupIds",
        [],
        "No groups were found.",
        "No group was found for groupId {}.",
    ),
    "products": CatalogOp(
        "catalog/products",
        None,
        [
            ("categoryId", "int32"),
            ("categoryName", "str"),
            ("groupId", "int64"),
            ("groupName", "str"),
            ("productName", "str"),
            ("getExtendedFields", "bool"),
            ("offset", "int32"),
            ("limit", "int32"),
            ("includeSkus", "bool"),
        ],
        "No products were found.",
    ),
    "products_by_ids": CatalogOp(
        "catalog/products/{}",
        "productIds",
        _PRODUCT_FLAGS,
        "No products were found.",
        "No product was found for productId {}.",
    ),
    "product_skus": CatalogOp("catalog/products/{}/skus", "productId", [], "No SKUs were found."),
    "skus": CatalogOp(
        "catalog/skus/{}", "skuIds", [], "No SKUs were found.", "No SKU was found for skuId {}."
    ),
    "conditions": CatalogOp("catalog/conditions", None, [], "No conditions were found."),
    "pricing_group": CatalogOp("pricing/group/{}", "groupId", [], "No products were found."),
    "pricing_products": CatalogOp(
        "pricing/product/{}",
        "productIds",
        [],
        "No products were found.",
        "No product price was found for productId {}.",
    ),
    "pricing_skus": CatalogOp(
        "pricing/sku/{}",
        "skuIds",
        [],
        "No SKU market prices were found.",
        "No SKU market price was found for skuId {}.",
    ),
}
_ID_BITS = {"categoryId": 31, "categoryIds": 31}  # every other id is an int64


def parse_path_ids(name: str, segment: str) -> list[int] | str:
    """The path id (one, or a comma-separated list of 1 to 250 counted as given), or the 400
    message."""
    parts = segment.split(",") if name.endswith("Ids") else [segment]
    if not all(_is_int(part, _ID_BITS.get(name, 63)) for part in parts):
        return f"The value '{segment}' is not valid for {name}."
    if len(parts) > MAX_IDS:
        return f"{name} must hold between 1 and {MAX_IDS} ids."
    return [_int_of(part) for part in parts]


def market_prices(data: Data) -> dict[int, list[Decimal]]:
    """SKU -> the prices of its market listings (channel 0, quantity > 0, generic and custom,
    every store, not of a category the store excludes on channel 0), one per listing."""
    return data.index("market_prices", _market_prices)


def _market_prices(data: Data) -> dict[int, list[Decimal]]:
    prices: dict[int, list[Decimal]] = {}
    for row in data.listings:
        if row["channelId"] != 0 or row["quantity"] <= 0:
            continue
        category = data.products[data.skus[row["skuId"]]["productId"]]["categoryId"]
        if (row["storeKey"].lower(), 0, category) in data.excluded:
            continue
        prices.setdefault(row["skuId"], []).append(row["price"])
    return prices


def _money_or_null(value: Decimal | None) -> float | None:
    return None if value is None else _money(value)


def skus_by_product(data: Data) -> dict[int, list[dict[str, Any]]]:
    """Product -> its SKUs, by skuId."""
    return data.index("skus_by_product", _skus_by_product)


def _skus_by_product(data: Data) -> dict[int, list[dict[str, Any]]]:
    found: dict[int, list[dict[str, Any]]] = {}
    for sku_id in sorted(data.skus):
        found.setdefault(data.skus[sku_id]["productId"], []).append(data.skus[sku_id])
    return found


def price_entries(
    data: Data,
    product_id: int,
    market: dict[int, list[Decimal]],
    skus_of: dict[int, list[dict[str, Any]]],
) -> list[Any]:
    """The pricing/group entries of a product: one per printing of its SKUs, by printingId."""
    by_printing: dict[int, list[Decimal]] = {}
    for sku in skus_of.get(product_id, []):
        by_printing.setdefault(sku["printingId"], []).extend(market.get(sku["skuId"], []))
    entries = []
    for printing_id in sorted(by_printing):
        prices = sorted(by_printing[printing_id])
        printing = data.printing_rows.get(printing_id)
        entries.append(
            {
                "productId": product_id,
                "lowPrice": _money_or_null(prices[0] if prices else None),
                # The median, each listing once; the lower middle one for an even count.
                "midPrice": _money_or_null(prices[(len(prices) - 1) // 2] if prices else None),
                "highPrice": _money_or_null(prices[-1] if prices else None),
                "marketPrice": None,
                "directLowPrice": None,
                "subTypeName": printing["name"] if printing else None,
            }
        )
    return entries


def _sku_object(sku: dict[str, Any]) -> dict[str, Any]:
    return {
        "skuId": sku["skuId"],
        "productId": sku["productId"],
        "languageId": sku["languageId"],
        "printingId": sku["printingId"],
        "conditionId": sku["conditionId"],
    }


def catalog_product(
    product: dict[str, Any], p: dict[str, Any], skus_of: dict[int, list[dict[str, Any]]]
) -> dict[str, Any]:
    """A catalog Product: extendedData with getExtendedFields, then skus with includeSkus."""
    obj = {
        "productId": product["productId"],
        "name": product["name"],
        "cleanName": product.get("cleanName"),
        "imageUrl": product.get("imageUrl"),
        "categoryId": product["categoryId"],
        "groupId": product["groupId"],
        "url": product.get("url"),
        "modifiedOn": product.get("modifiedOn"),
        "imageCount": product.get("imageCount"),
        "presaleInfo": product.get("presaleInfo"),
    }
    if p.get("getExtendedFields"):
        extended = product.get("extendedData")
        if extended is None:  # derived from the number and the rarity, each where not null
            extended = [
                {"name": name, "displayName": shown, "value": product.get(key)}
                for key, name, shown in (
                    ("number", "Number", "Card Number"),
                    ("rarity", "Rarity", "Rarity"),
                )
                if product.get(key) is not None
            ]
        obj["extendedData"] = extended
    if p.get("includeSkus"):
        obj["skus"] = [_sku_object(s) for s in skus_of.get(product["productId"], [])]
    return obj


def _category_vocabulary(data: Data, category_id: int, key: str) -> set[int]:
    """The `key` ids (conditionId, ...) of the SKUs of the category's products."""
    return {
        s[key]
        for s in data.skus.values()
        if data.products[s["productId"]]["categoryId"] == category_id
    }


def _condition_order(c: dict[str, Any]) -> tuple[Any, ...]:
    return (c["displayOrder"] is None, c["displayOrder"] or 0, c["conditionId"])


def _printing_order(r: dict[str, Any]) -> tuple[Any, ...]:
    return (r["displayOrder"] is None, r["displayOrder"] or 0, r["printingId"])


# The fields of a group, in the order of its object.
GROUP_FIELDS = [
    "groupId",
    "name",
    "abbreviation",
    "isSupplemental",
    "publishedOn",
    "modifiedOn",
    "categoryId",
]


def all_groups(data: Data, p: dict[str, Any]) -> list[Any]:
    """catalog/groups: every group the filters keep (a category by id, by name folded, and
    isSupplemental, which a null matches neither way), by sortOrder's field (text folded, a
    null the smallest value), descending with sortDesc, ties by groupId."""
    found = []
    for group in data.groups.values():
        category = data.categories.get(group["categoryId"])
        if p["categoryId"] is not None and group["categoryId"] != p["categoryId"]:
            continue
        if p["categoryName"] is not None and (
            category is None or fold(category["name"]) != fold(p["categoryName"])
        ):
            continue
        if p["isSupplemental"] is not None and group.get("isSupplemental") != p["isSupplemental"]:
            continue
        found.append(group)
    field = p["sortOrder"] or "name"
    desc = bool(p["sortDesc"])

    def value(group: dict[str, Any]) -> Any:
        got = group.get(field)
        return fold(got) if isinstance(got, str) else got

    present = sorted((g for g in found if value(g) is not None), key=lambda g: g["groupId"])
    present.sort(key=value, reverse=desc)  # stable: ties keep groupId ascending
    nulls = sorted((g for g in found if value(g) is None), key=lambda g: g["groupId"])
    ordered = present + nulls if desc else nulls + present
    return [_group_object(g) for g in ordered]


def catalog_results(data: Data, name: str, path_id: int | None, p: dict[str, Any]) -> list[Any]:
    """Every result of an operation with one path id or none (before paging), in its order."""
    if name == "all_groups":
        return all_groups(data, p)
    if name == "category_groups":
        groups = [g for g in data.groups.values() if g["categoryId"] == path_id]
        groups.sort(key=lambda g: (fold(g["name"]), g["groupId"]))
        return [_group_object(g) for g in groups]
    if name == "category_conditions" and path_id is not None:
        used = _category_vocabulary(data, path_id, "conditionId")
        rows = [c for i, c in data.condition_rows.items() if i in used]
        return sorted(rows, key=_condition_order)
    if name == "category_languages" and path_id is not None:
        used = _category_vocabulary(data, path_id, "languageId")
        return [
            {"languageId": i, "name": data.languages[i][0], "abbr": data.languages[i][1]}
            for i in sorted(used)
            if i in data.languages
        ]
    if name == "category_printings" and path_id is not None:
        used = _category_vocabulary(data, path_id, "printingId")
        rows = [r for i, r in data.printing_rows.items() if i in used]
        return sorted(rows, key=_printing_order)
    if name == "conditions":
        return sorted(data.condition_rows.values(), key=_condition_order)
    if name == "product_skus":
        return [_sku_object(s) for s in skus_by_product(data).get(path_id or 0, [])]
    if name == "pricing_group":
        market, skus_of = market_prices(data), skus_by_product(data)
        products = sorted(i for i, pr in data.products.items() if pr["groupId"] == path_id)
        return [e for i in products for e in price_entries(data, i, market, skus_of)]
    if name == "search_manifest":
        return [search_manifest(data, path_id)] if path_id in data.categories else []
    assert name == "products", name
    found = []
    for product in data.products.values():
        category = data.categories[product["categoryId"]]
        group = data.groups[product["groupId"]]
        if p["categoryId"] is not None and product["categoryId"] != p["categoryId"]:
            continue
        if p["categoryName"] is not None and fold(category["name"]) != fold(p["categoryName"]):
            continue
        if p["groupId"] is not None and product["groupId"] != p["groupId"]:
            continue
        if p["groupName"] is not None and fold(group["name"]) != fold(p["groupName"]):
            continue
        if p["productName"] is not None and fold(p["productName"]) not in fold(product["name"]):
            continue
        found.append(product)
    found.sort(key=lambda pr: (fold(pr["name"]), pr["productId"]))
    skus_of = skus_by_product(data)
    return [catalog_product(pr, p, skus_of) for pr in found]


def catalog_by_ids(
    data: Data, name: str, ids: list[int], p: dict[str, Any]
) -> tuple[list[Any], list[int]]:
    """The results of an operation on a list of ids, in the order first given, and the ids
    not found (each once)."""
    market = market_prices(data) if name.startswith("pricing") else {}
    skus_of = skus_by_product(data)
    results: list[Any] = []
    missing: list[int] = []
    for i in dict.fromkeys(ids):
        if name == "categories" and i in data.category_objects:
            results.append(data.category_objects[i])
        elif name == "groups" and i in data.groups:
            results.append(_group_object(data.groups[i]))
        elif name == "products_by_ids" and i in data.products:
            results.append(catalog_product(data.products[i], p, skus_of))
        elif name == "skus" and i in data.skus:
            results.append(_sku_object(data.skus[i]))
        elif name == "pricing_products" and i in data.products:
            results += price_entries(data, i, market, skus_of)  # no SKUs: nothing
        elif name == "pricing_skus" and i in data.skus:
            low = min(market.get(i, []), default=None)
            results.append(
                {
                    "skuId": i,
                    "lowPrice": _money_or_null(low),
                    "lowestShipping": None,
                    "lowestListingPrice": _money_or_null(low),
                    "marketPrice": None,
                    "directLowPrice": None,
                }
            )
        else:
            missing.append(i)
    return results, missing


def _error(status: int, messages: list[str]) -> tuple[int, bytes]:
    return status, dumps({"success": False, "errors": messages, "results": []})


def answer_catalog(data: Data, path: str, query: str) -> tuple[int, bytes] | None:
    """(status, body) for GET path?query (path percent-decoded) on a catalog or marketplace
    price operation; None for a path that is none of them."""
    import re

    if re.fullmatch(r"/v1\.39\.0/catalog/categories/[^/]+/rarities/?", path):
        return _error(404, ["URL not found."])
    matches = [
        (name, op, found)
        for name, op in CATALOG_OPS.items()
        if (
            found := re.fullmatch(
                rf"/v1\.39\.0/{re.escape(op.path)}/?".replace(r"\{\}", "([^/]+)"), path
            )
        )
    ]
    if not matches:
        return None
    name, op, match = matches[0]
    errors: list[str] = []
    ids: list[int] = []
    if op.id_name is not None:
        parsed_ids = parse_path_ids(op.id_name, match.group(1))
        if isinstance(parsed_ids, str):
            errors.append(parsed_ids)
        else:
            ids = parsed_ids
    parsed = parse_operation_query(op.parameters, query)
    if isinstance(parsed, list):
        errors += parsed
    if errors:
        return _error(400, errors)
    assert isinstance(parsed, dict)
    if op.missing:
        results, missing = catalog_by_ids(data, name, ids, parsed)
        if not results:
            return _error(404, [op.none])
        errors = [op.missing.format(i) for i in missing]
        body = {"success": True, "errors": errors, "results": results}
        return 207 if errors else 200, dumps(body)
    results = catalog_results(data, name, ids[0] if ids else None, parsed)
    if "offset" in parsed:
        page = results[parsed["offset"] : parsed["offset"] + parsed["limit"]]
        if not page:
            return _error(404, [op.none])
        body = {"totalItems": len(results), "success": True, "errors": [], "results": page}
        return 200, dumps(body)
    if not results:
        return _error(404, [op.none])
    return 200, dumps({"success": True, "errors": [], "results": results})


# ---------------------------------------------------------------------------------------------
# Search (docs/contract.md §12): the category's manifest, the catalog's search and a store's
# search, from the contract alone.
# ---------------------------------------------------------------------------------------------

CATALOG_OPS["search_manifest"] = CatalogOp(
    "catalog/categories/{}/search/manifest", "categoryId", [], "No categories were found."
)
SEARCH_FILTERS = {
    "productname": "ProductName",
    "setname": "SetName",
    "number": "Number",
    "rarity": "Rarity",
}
SEARCH_SORTS = ("productname asc", "minprice desc", "minprice asc", "relevance")
STORE_SEARCH_QUERY = (
    "skuLimit",
    "includeCustom",
    "includeGeneric",
    "channelId",
    "includeExcludedCategories",
)


def _distinct_spellings(values: list[str]) -> list[dict[str, str]]:
    """One item per lower-cased value, its smallest spelling, by the lower-cased value."""
    kept: dict[str, str] = {}
    for value in values:
        key = fold(value)
        if key not in kept or value < kept[key]:
            kept[key] = value
    return [{"text": kept[k], "value": kept[k]} for k in sorted(kept)]


def search_manifest(data: Data, category_id: int) -> dict[str, Any]:
    groups = [g["name"] for g in data.groups.values() if g["categoryId"] == category_id]
    rarities = [
        p["rarity"]
        for p in data.products.values()
        if p["categoryId"] == category_id and p.get("rarity") is not None
    ]
    option = lambda text, value: {"text": text, "value": value}  # noqa: E731
    return {
        "sorting": [
            option("A-Z", "ProductName ASC"),
            option("Price: High to Low", "MinPrice DESC"),
            option("Price: Low to High", "MinPrice ASC"),
            option("Relevance", "Relevance"),
        ],
        "filters": [
            {
                "name": "ProductName",
                "displayName": "Product Name",
                "inputType": "Text",
                "items": [],
            },
            {
                "name": "SetName",
                "displayName": "Set",
                "inputType": "SingleValue",
                "items": [option("All Sets", "All"), *_distinct_spellings(groups)],
            },
            {"name": "Number", "displayName": "Number", "inputType": "Text", "items": []},
            {
                "name": "Rarity",
                "displayName": "Rarity",
                "inputType": "MultipleValues",
                "items": _distinct_spellings(rarities),
            },
        ],
    }


def _not_valid(key: str) -> str:
    return f"The value given for the parameter '{key}' is not valid."


def read_search_body(body: bytes) -> dict[str, Any] | list[str]:
    """The body's values (sort lower-cased, spaces folded; filters as (lower name, values)),
    or its 400 messages."""
    bad = ["The request body is not valid."]
    try:
        text = body.decode("utf-8", errors="strict")
        value = json.loads(
            text,
            parse_float=lambda raw: ("fraction", raw),
            parse_int=lambda raw: int(raw) if len(raw) < 25 else ("long", raw),
            parse_constant=lambda raw: (_ for _ in ()).throw(ValueError(raw)),
        )
        json.dumps(value, ensure_ascii=False).encode("utf-8")  # a lone surrogate is no text
    except (ValueError, RecursionError):
        return bad
    if type(value) is not dict:
        return bad
    got: dict[str, Any] = {"sort": "relevance", "limit": 10, "offset": 0, "filters": []}
    errors = []
    sort = value.get("sort")
    if sort is not None:
        words = sort.strip(" \t\r\n\f\v").split(" ") if type(sort) is str else []
        folded = " ".join(w for w in words if w != "").lower()
        if type(sort) is str and folded in SEARCH_SORTS and "  " not in folded:
            got["sort"] = folded
        else:
            errors.append(_not_valid("sort"))
    for key, low, high in (("limit", 1, 100), ("offset", 0, 2**31 - 1)):
        given = value.get(key)
        if given is None:
            continue
        if type(given) is int and low <= given <= high:
            got[key] = given
        else:
            errors.append(_not_valid(key))
    filters = value.get("filters")
    if filters is not None:
        checked = []
        ok = type(filters) is list
        for item in filters if ok else []:
            name = item.get("name") if type(item) is dict else None
            values = item.get("values") if type(item) is dict else None
            values = [] if values is None else values
            if (
                type(item) is not dict
                or type(name) is not str
                or name.lower() not in SEARCH_FILTERS
                or type(values) is not list
                or any(type(v) is not str for v in values)
            ):
                ok = False
                break
            checked.append((name.lower(), [fold(v) for v in values]))
        if ok:
            got["filters"] = checked
        else:
            errors.append(_not_valid("filters"))
    return errors or got


def search_matches(
    filters: list[tuple[str, list[str]]], name: str, group: str, number: Any, rarity: Any
) -> bool:
    """Every filter holds: one of its values matches (none given: any product)."""
    for kind, values in filters:
        if not values:
            continue
        if kind == "productname":
            hit = any(v in fold(name) for v in values)
        elif kind == "setname":
            hit = any(v == "all" or v == fold(group) for v in values)
        else:
            own = number if kind == "number" else rarity
            hit = own is not None and fold(own) in values
        if not hit:
            return False
    return True


def relevance(filters: list[tuple[str, list[str]]], name: str) -> int:
    wanted = [v for kind, values in filters if kind == "productname" for v in values]
    if fold(name) in wanted:
        return 0
    if any(fold(name).startswith(v) for v in wanted):
        return 1
    return 2


def catalog_search(data: Data, category_id: int, body: dict[str, Any]) -> list[int]:
    """Every matching product id of the category, in the body's order."""
    market = market_prices(data)
    skus_of = skus_by_product(data)
    found = []
    for product in data.products.values():
        if product["categoryId"] != category_id:
            continue
        group = data.groups[product["groupId"]]["name"]
        if not search_matches(
            body["filters"], product["name"], group, product.get("number"), product.get("rarity")
        ):
            continue
        prices = [
            p for s in skus_of.get(product["productId"], []) for p in market.get(s["skuId"], [])
        ]
        found.append((product, min(prices) if prices else None))
    sort = body["sort"]
    if sort.startswith("minprice"):
        sign = 1 if sort.endswith("asc") else -1
        found.sort(
            key=lambda f: (
                f[1] is None,
                sign * (f[1] or 0),
                fold(f[0]["name"]),
                f[0]["productId"],
            )
        )
    else:
        ranked = sort == "relevance"
        found.sort(
            key=lambda f: (
                relevance(body["filters"], f[0]["name"]) if ranked else 0,
                fold(f[0]["name"]),
                f[0]["productId"],
            )
        )
    return [f[0]["productId"] for f in found]


def answer_post(data: Data, path: str, query: str, body: bytes) -> tuple[int, bytes] | None:
    """(status, body) for POST path?query with `body` (path percent-decoded); None for a path
    no POST is answered on (405)."""
    import re

    catalog = re.fullmatch(r"/v1\.39\.0/catalog/categories/([^/]+)/search/?", path)
    store = re.fullmatch(r"/v1\.39\.0/stores/([^/]+)/inventory/categories/([^/]+)/search/?", path)
    if catalog is None and store is None:
        return None
    segment = (catalog or store).group(1 if catalog else 2)  # type: ignore[union-attr]
    errors: list[str] = []
    parsed_id = parse_path_ids("categoryId", segment)
    if isinstance(parsed_id, str):
        errors.append(parsed_id)
    params = Request()
    if store is not None:  # the summary's parameters the operation reads, as §4 parses them
        from urllib.parse import unquote_plus

        names = {n.lower() for n in STORE_SEARCH_QUERY}
        kept = [p for p in query.split("&") if unquote_plus(p.partition("=")[0]).lower() in names]
        parsed = parse_query("&".join(kept))
        if isinstance(parsed, list):
            errors += parsed
        else:
            params = parsed
    read = read_search_body(body)
    if isinstance(read, list):
        errors += read
    if errors:
        return _error(400, errors)
    assert isinstance(read, dict) and isinstance(parsed_id, list)
    category_id = parsed_id[0]
    start, end = read["offset"], read["offset"] + read["limit"]
    if catalog is not None:
        if category_id not in data.categories:
            return _error(404, ["No categories were found."])
        ids = catalog_search(data, category_id, read)
        if not ids[start:end]:
            return _error(404, ["No products were found."])
        return 200, dumps(
            {"totalItems": len(ids), "success": True, "errors": [], "results": ids[start:end]}
        )
    key = store.group(1).lower()  # type: ignore[union-attr]
    if key not in data.known_stores():
        return _error(404, ["No stores were found."])
    summary_sort = {
        "productname asc": "name asc",
        "minprice desc": "price desc",
        "minprice asc": "price asc",
        "relevance": "name asc",
    }[read["sort"]]
    from dataclasses import replace

    request = replace(params, categoryId=category_id, sort=summary_sort)
    products = [
        p
        for p in products_for(data, key, request)
        if search_matches(read["filters"], p["name"], p["group"], p["number"], p["rarity"])
    ]
    if read["sort"] == "relevance":  # stable: name order within each part
        products.sort(key=lambda p: relevance(read["filters"], p["name"]))
    page = products[start:end]
    if not page:
        return _error(404, ["No products were found."])
    return 200, dumps({"totalItems": len(products), "success": True, "errors": [], "results": page})
