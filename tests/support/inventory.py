"""The store inventory tests' tiny input (tests/serve/test_inventory.py, test_cache.py): two
games' catalog, and one store's listings that tie on price, hold custom entries and sell in
two channels."""

from __future__ import annotations

from typing import Any

CATALOG: dict[str, list[dict[str, Any]]] = {
    "categories": [{"categoryId": 1, "name": "Magic"}, {"categoryId": 3, "name": "Pokémon"}],
    "groups": [
        {"groupId": 10, "categoryId": 1, "name": "Alpha"},
        {"groupId": 30, "categoryId": 3, "name": "Base Set"},
    ],
    "products": [
        {
            "productId": 100,
            "categoryId": 1,
            "groupId": 10,
            "name": "Sol Ring",
            "rarity": "U",
            "number": "1",
        },
        {
            "productId": 101,
            "categoryId": 1,
            "groupId": 10,
            "name": "black Lotus",
            "rarity": "R",
            "number": None,
        },
        {
            "productId": 102,
            "categoryId": 1,
            "groupId": 10,
            "name": "Ancestral Recall",
            "rarity": "R",
            "number": "3",
        },
        {
            "productId": 300,
            "categoryId": 3,
            "groupId": 30,
            "name": "Flabébé",
            "rarity": None,
            "number": "4",
        },
    ],
    "skus": [
        {"skuId": 1000, "productId": 100, "conditionId": 1, "languageId": 1, "printingId": 1},
        {"skuId": 1001, "productId": 100, "conditionId": 2, "languageId": 1, "printingId": 2},
        {"skuId": 1002, "productId": 100, "conditionId": 1, "languageId": 2, "printingId": 1},
        {"skuId": 1010, "productId": 101, "conditionId": 1, "languageId": 1, "printingId": 1},
        {"skuId": 1020, "productId": 102, "conditionId": 1, "languageId": 1, "printingId": 1},
        {"skuId": 3000, "productId": 300, "conditionId": 1, "languageId": 2, "printingId": 1},
    ],
    "languages": [
        {"languageId": 1, "name": "English", "abbr": "EN"},
        {"languageId": 2, "name": "Japanese", "abbr": None},
    ],
}


def L(store: str, sku: int, price: str, qty: int = 1, **kw: Any) -> dict[str, Any]:
    return {"storeKey": store, "skuId": sku, "price": price, "quantity": qty, **kw}


LISTINGS = [
    L("shop", 1000, "5.00", 2, isFeatured=True),
    L("shop", 1001, "5.00", 1),  # ties 1000 on price: skuId breaks it
    L(
        "shop",
        1000,
        "5.00",
        1,
        isCustom=True,
        storePriceCustomId=8,
        title="Signed",
        mainImageUrl="m.jpg",
        additionalImageUrls=["a.jpg"],
    ),
    L("shop", 1000, "5.00", 1, isCustom=True, storePriceCustomId=7),
    L("shop", 1002, "0.25", 3),  # the cheapest entry, not shown with skuLimit 3
    L("shop", 1010, "5.00", 1),
    L("shop", 1020, "0.25", 1),  # ties product 100 on lowestPrice 0.25
    L("shop", 3000, "12.30", 1, channelId=0),
    L("shop", 3000, "7.00", 4, channelId=1),
    L("zero", 1010, "1.00", 0),  # quantity 0: not for sale
]
