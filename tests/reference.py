"""An independent reference model of docs/contract.md, in plain Python, for the tests.

It shares no code with the pipeline: it reads plain dictionaries, filters, groups, sorts and
serialises with the standard library (prices via float repr, JSON via `json.dumps`), so that a
disagreement points at a bug in one of the two.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any


@dataclass
class Data:
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

    def known_stores(self) -> set[str]:
        return self.stores | {row["storeKey"].lower() for row in self.listings}


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
    for row in data.listings:
        if row["storeKey"].lower() != store or row["channelId"] != req.channelId:
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
                extended = {e["name"]: e["value"] for e in item.get("extendedData", [])}
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


def load_directory(input_dir: Path) -> Data:
    """The accepted content of a valid input directory (no rejects expected)."""
    catalog, stores = input_dir / "catalog", input_dir / "stores"
    data = Data()
    for r in _read_rows(catalog, "categories"):
        data.categories[int(r["categoryId"])] = {
            "categoryId": int(r["categoryId"]),
            "name": r["name"],
        }
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
        }
    for r in _read_rows(catalog, "skus"):
        data.skus[int(r["skuId"])] = {k: int(v) for k, v in r.items()}
    data.conditions = {int(r["conditionId"]): r["name"] for r in _read_rows(catalog, "conditions")}
    data.languages = {
        int(r["languageId"]): (r["name"], r.get("abbr")) for r in _read_rows(catalog, "languages")
    }
    data.printings = {
        int(r["printingId"]): bool(_bool(r.get("foil"), False))
        for r in _read_rows(catalog, "printings")
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
            bits = 31 if kind == "int32" else 63
            digits = raw[1:] if raw.startswith("-") else raw
            if (
                not digits
                or not all("0" <= c <= "9" for c in digits)
                or not -(2**bits) <= int(raw) < 2**bits
            ):
                errors.append(bad)
            else:
                values[name] = int(raw)
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
    "offset": 0,
    "limit": 10,
}


def _is_int(raw: str, bits: int) -> bool:
    digits = raw[1:] if raw.startswith("-") else raw
    return (
        bool(digits) and all("0" <= c <= "9" for c in digits) and -(2**bits) <= int(raw) < 2**bits
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
                values[name] = int(raw)
            else:
                errors.append(f"The value '{raw}' is not valid for {name}.")
        elif kind == "bool":
            if raw.lower() in ("true", "false"):
                values[name] = raw.lower() == "true"
            else:
                errors.append(f"The value '{raw}' is not valid for {name}.")
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
    for row in data.listings:
        if row["storeKey"].lower() != store or row["channelId"] != p["channelId"]:
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
    product_of = {s: data.skus[s]["productId"] for s in data.skus}
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
    product_id = None if segment is None else int(segment)
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
