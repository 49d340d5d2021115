"""Writes the shipped sample inputs in this folder (deterministic: same bytes every run).

    .venv/bin/python data/make_sample.py

Five real games with their real condition, language and printing vocabularies; seven stores
from a handful of listings to a few thousand; custom listings with titles and images; a second
channel; excluded categories; null `number`, `abbr` and `isFeatured`; names with quotes, accents
and non-Latin scripts; price ties; a SKU whose condition has no row in `conditions`; every
product with the catalog's own fields (cleanName, imageUrl, url, modifiedOn, imageCount,
presaleInfo, extendedData), as the live service has them. Tables come as CSV, Parquet and NDJSON,
and the listings are split over three files of different formats.
"""

from __future__ import annotations

import csv
import json
import random
import re
import unicodedata
from datetime import date, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.contract import TABLES_BY_NAME
from pipeline.ingest.adapters import SELLER_PORTAL_COLUMNS
from pipeline.tools.generate import LANGUAGES  # the marketplace's language vocabulary

HERE = Path(__file__).resolve().parent
RNG = random.Random(20261121)

# Categories as the live service has them (every client reads them unchanged: tcgplayersdk's
# category model needs isDirect and a modifiedOn on every one); the absent isDirect column and a
# null modifiedOn are cases of the tests' inputs, not of the sample.
CATEGORIES = [
    # id, name, displayName, seo, sealed, nonSealed, popularity, modifiedOn, isDirect
    (
        1,
        "Magic",
        "Magic: The Gathering",
        "magic",
        "Sealed Products",
        "Singles",
        0,
        "2025-06-12T19:08:33.837",
        True,
    ),
    (2, "YuGiOh", "YuGiOh", "yugioh", "Sealed Products", "Singles", 1, "2024-11-02T08:00:00", True),
    (
        3,
        "Pokemon",
        "Pokémon",
        "pokemon",
        "Sealed Products",
        "Singles",
        2,
        "2025-09-30T23:59:59.5",
        True,
    ),
    (
        62,
        "Flesh & Blood TCG",
        "Flesh and Blood TCG",
        "flesh-and-blood-tcg",
        "Sealed Products",
        "Singles",
        10,
        "2023-03-15T12:30:00.120",
        False,
    ),
    (
        71,
        "Lorcana TCG",
        "Disney Lorcana",
        "lorcana-tcg",
        "Sealed Products",
        "Singles",
        8,
        "2024-02-20T16:42:11.07",
        True,
    ),
]

CONDITIONS = [
    (1, "Near Mint", "NM", 1),
    (2, "Lightly Played", "LP", 2),
    (3, "Moderately Played", "MP", 3),
    (4, "Heavily Played", "HP", 4),
    (5, "Damaged", "DMG", 5),
    (6, "Unopened", "U", 6),
]
MISSING_CONDITION = 7  # used by SKUs, deliberately absent from conditions.csv ("deprecated")


PRINTINGS = [
    # id, name, foil (displayOrder: the position; modifiedOn: `printing_modified_on`)
    (1, "Normal", False),
    (2, "Foil", True),
    (3, "Holofoil", True),
    (4, "Reverse Holofoil", True),
    (5, "1st Edition", False),
    (6, "Unlimited", False),
    (7, "Cold Foil", True),
    (8, "Rainbow Foil", True),
    (9, "Enchanted", True),
]

# category -> (sets, printings, languages, card names)
GAMES: dict[int, tuple[list[tuple[str, str]], list[int], list[int], list[str]]] = {
    1: (
        [
            ("Dominaria United", "DMU"),
            ("Modern Horizons 2", "MH2"),
            ("Alpha Edition", "LEA"),
            ("Ice Age", "ICE"),
            ("Unglued", "UGL"),
            ("Phyrexia: All Will Be One", "ONE"),
            ("Kamigawa: Neon Dynasty", "NEO"),
        ],
        [1, 2],
        [1, 4, 5, 7, 11, 12],
        [
            "Ragavan, Nimble Pilferer",
            "Jace, the Mind Sculptor",
            "Lim-Dûl's Vault",
            "Æther Vial",
            '"Ach! Hans, Run!"',
            "Sol Ring",
            "Lightning Bolt",
            "Counterspell",
            "Dark Ritual",
            "Elesh Norn, Mother of Machines",
            "Urza's Saga",
            "Solitude",
            "Sheoldred, the Apocalypse",
            "The Wandering Emperor",
            "Jötun Grunt",
            "Séance",
            "Dandân",
            "Ifh-Bíff Efreet",
            "Márton Stromgald",
            "Kaya's Ghostform",
            "Atraxa, Grand Unifier",
            "Thalia, Guardian of Thraben",
            "Brainstorm",
            "Swords to Plowshares",
            "Force of Negation",
            "Fury",
            "Grief",
            "Endurance",
            "Sword of Fire and Ice",
            "Lotus Petal",
            "Mox Opal",
            "Tarmogoyf",
            "Snapcaster Mage",
            "Birds of Paradise",
            "Llanowar Elves",
            "Serra Angel",
            "Shivan Dragon",
            "Wrath of God",
            "Demonic Tutor",
            "Ancestral Recall",
        ],
    ),
    3: (
        [
            ("Scarlet & Violet 151", "MEW"),
            ("Base Set", "BS"),
            ("Paldea Evolved", "PAL"),
            ("Evolving Skies", "EVS"),
            ("Pokémon Card Game Classic", "CLK"),
        ],
        [1, 3, 4, 5, 6],
        [1, 7, 4],
        [
            "Pikachu",
            "Charizard ex",
            "Flabébé",
            "Mr. Mime",
            "Nidoran♀",
            "Nidoran♂",
            "Farfetch'd",
            "Porygon-Z",
            "Type: Null",
            "Mew ex",
            "Umbreon VMAX",
            "Rayquaza VMAX",
            "Eevee",
            "ピカチュウ",
            "リザードン",
            "Professor's Research",
            "Boss's Orders",
            "Ultra Ball",
            "Rare Candy",
            "Gardevoir ex",
            "Iono",
            "Miraidon ex",
            "Koraidon ex",
            "Snorlax",
        ],
    ),
    2: (
        [
            ("Legend of Blue Eyes White Dragon", "LOB"),
            ("Metal Raiders", "MRD"),
            ("Phantom Nightmare", "PHNI"),
            ("Rarity Collection", "RA01"),
        ],
        [5, 6],
        [1, 4, 5, 7],
        [
            "Blue-Eyes White Dragon",
            "Dark Magician",
            "Pot of Greed",
            "Exodia the Forbidden One",
            "Ash Blossom & Joyous Spring",
            'Maxx "C"',
            "Red-Eyes B. Dragon",
            "Mirror Force",
            "Raigeki",
            "Monster Reborn",
            "Snake-Eye Ash",
            "Fiendsmith Engraver",
            "青眼の白龍",
            "Kuriboh",
            "Summoned Skull",
        ],
    ),
    62: (
        [("Welcome to Rathe", "WTR"), ("Monarch", "MON"), ("Heavy Hitters", "HVY")],
        [1, 7, 8],
        [1, 5, 4],
        [
            "Command and Conquer",
            "Enlightened Strike",
            "Snatch",
            "Heart of Fyendal",
            "Prism, Sculptor of Arc Light",
            "Chane, Bound by Shadow",
            "Kayo, Armed and Dangerous",
            "Pummel",
            "Sink Below",
            "Fyendal's Spring Tunic",
        ],
    ),
    71: (
        [("The First Chapter", "TFC"), ("Rise of the Floodborn", "ROF")],
        [1, 2, 9],
        [1, 4, 5],
        [
            "Elsa - Spirit of Winter",
            "Mickey Mouse - Brave Little Tailor",
            "Stitch - Rock Star",
            "Maleficent - Monstrous Dragon",
            "Be Prepared",
            "Ursula's Cauldron",
            "Tinker Bell - Giant Fairy",
            "Genie - On the Job",
        ],
    ),
}

RARITIES = {
    1: ["Common", "Uncommon", "Rare", "Mythic", "Special"],
    3: ["Common", "Uncommon", "Rare", "Double Rare", "Illustration Rare", "Holo Rare"],
    2: ["Common", "Rare", "Super Rare", "Ultra Rare", "Secret Rare", "Starlight Rare"],
    62: ["Common", "Rare", "Super Rare", "Majestic", "Legendary"],
    71: ["Common", "Uncommon", "Rare", "Super Rare", "Legendary", "Enchanted"],
}

STORES = [
    # key, name, listings (approx), channels, sells custom, games carried
    ("3d05ef67", "Dragon's Hoard Games", 3500, (0, 1), True, (1, 2, 3, 62, 71)),
    ("a1b2c3d4", "Le Grimoire Café", 1400, (0,), True, (1, 3, 62, 71)),
    ("KardKastle", "Kard Kastle", 600, (0, 1), False, (1, 2)),
    ("tokyo-cards_01", "東京カードショップ", 160, (0,), True, (2, 3)),
    ("mom-and-pop", 'Mom & Pop\'s "Card" Corner', 40, (0,), False, (1, 3, 71)),
    ("tiny7", "Tiny Seven", 7, (0,), False, (2, 3)),
    ("closed-store", "Closed for Inventory", 0, (0,), False, ()),
]


def write_csv(path: Path, header: list[str], rows: list[list[object]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(header)
        for row in rows:
            writer.writerow(["" if v is None else _text(v) for v in row])


def _text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | dict):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


# The catalog's own fields of a product, as the live service has them, from the product's row
# alone (no random draws: the rest of the sample stays as it was).
SEO_NAMES = {c[0]: c[3] for c in CATEGORIES}
# Entries of extendedData after Number and Rarity, by category: (name, displayName, values).
EXTENDED_FIELDS: dict[int, list[tuple[str, str, list[str]]]] = {
    1: [
        ("SubType", "Sub Type", ["Legendary Creature — Human", "Instant", "Sorcery", "Artifact"]),
        ("OracleText", "Oracle Text", ["<p>Flash</p>", "<p>{T}: Add {C}{C}.</p>", "<p>—</p>"]),
    ],
    3: [
        ("CardType", "Card Type", ["Pokemon", "Trainer", "Energy"]),
        ("HP", "HP", ["60", "70", "120", "230", "310"]),
        ("Stage", "Stage", ["Basic", "Stage 1", "Stage 2"]),
    ],
    2: [
        ("Attribute", "Attribute", ["LIGHT", "DARK", "EARTH", "WIND"]),
        ("MonsterType", "Monster Type", ["Dragon/Normal", "Spellcaster/Effect", "Fiend/Effect"]),
        ("Attack", "ATK", ["3000", "2500", "0"]),
    ],
    62: [
        ("Class", "Class", ["Warrior", "Ninja", "Generic", "Wizard"]),
        ("PitchValue", "Pitch Value", ["1", "2", "3"]),
    ],
    71: [
        ("InkType", "Ink Type", ["Amber", "Amethyst", "Emerald", "Ruby", "Sapphire", "Steel"]),
        ("Cost", "Cost", ["1", "2", "4", "7"]),
    ],
}
# Sealed products on presale (the rest: not on presale), by set.
PRESALE = {
    "Heavy Hitters": ("2026-03-13T00:00:00", "Ships by the release date"),
    "Rise of the Floodborn": ("2026-02-27T00:00:00", None),
}


def clean_name(name: str) -> str:
    """A name as the catalog's cleanName spells it: Latin accents and punctuation dropped
    ("Lim-Dûl's Vault": "LimDuls Vault"; "ピカチュウ" as it is)."""
    letters = unicodedata.normalize("NFD", name)
    plain = "".join(
        c
        for i, c in enumerate(letters)
        if not (unicodedata.category(c) == "Mn" and i and letters[i - 1].isascii())
    )
    kept = "".join(c for c in unicodedata.normalize("NFC", plain) if c.isalnum() or c.isspace())
    return " ".join(kept.split())


def catalog_fields(row: list[object], set_name: str) -> list[object]:
    """cleanName, imageUrl, url, modifiedOn, imageCount, presaleInfo, extendedData of a
    product row (productId, categoryId, groupId, name, rarity, number)."""
    product_id, category_id, _, name, rarity, number = row[:6]
    assert isinstance(product_id, int) and isinstance(category_id, int)
    n = product_id - 100000
    words = f"{SEO_NAMES[category_id]} {set_name} {clean_name(str(name))}"
    slug = re.sub(r"[^a-z0-9]+", "-", words.lower().replace("æ", "ae")).strip("-")
    modified = datetime(2025, 3, 1) + timedelta(minutes=97 * n, seconds=13 * n)
    fraction = ("", ".3", ".47", ".813")[n % 4]
    sealed = rarity is None and number is None
    released, note = PRESALE.get(set_name, (None, None)) if sealed else (None, None)
    extended = [{"name": "Number", "displayName": "Card Number", "value": number}] if number else []
    if rarity:
        extended.append({"name": "Rarity", "displayName": "Rarity", "value": rarity})
    if sealed:
        text = f"<p>{name}: sealed, factory fresh.</p>"
        extended.append({"name": "Description", "displayName": "Description", "value": text})
    else:
        extended += [
            {"name": key, "displayName": label, "value": values[n % len(values)]}
            for key, label, values in EXTENDED_FIELDS[category_id]
        ]
    return [
        clean_name(str(name)),
        f"https://tcgplayer-cdn.tcgplayer.com/product/{product_id}_200w.jpg",
        f"https://www.tcgplayer.com/product/{product_id}/{slug}",
        modified.isoformat(timespec="seconds") + fraction,
        3 if sealed else (0 if n % 17 == 0 else 1),
        {"isPresale": released is not None, "releasedOn": released, "note": note},
        extended,
    ]


def printing_modified_on(printing_id: int) -> str:
    """A printing's modifiedOn, as the live service writes it, from its id."""
    modified = datetime(2024, 1, 17, 14, 23, 40) + timedelta(days=41 * printing_id)
    return modified.isoformat(timespec="seconds") + ("", ".603", ".2")[printing_id % 3]


def group_dates(group_id: int) -> tuple[bool, str, str]:
    """(isSupplemental, publishedOn, modifiedOn) of a group, as the live service writes them
    (published at midnight; modified later, with a fraction of 0 to 3 digits), from its id
    alone: the random draws of the rest of the sample stay as they were."""
    n = group_id - 1000
    published = date(2015, 1, 1) + timedelta(days=97 * n)
    modified = datetime(2025, 1, 1) + timedelta(days=11 * n, seconds=3607 * n)
    fraction = ("", ".27", ".8", ".123", ".5")[n % 5]
    return (
        False,
        f"{published.isoformat()}T00:00:00",
        modified.isoformat(timespec="seconds") + fraction,
    )


def build_catalog() -> tuple[list[list[object]], list[list[object]], list[list[object]]]:
    groups, products, skus = [], [], []
    group_id, product_id, sku_id = 1000, 100000, 5000000
    for category_id, (sets, printings, languages, names) in GAMES.items():
        for set_name, abbr in sets:
            group_id += 1
            groups.append([group_id, category_id, set_name, abbr, *group_dates(group_id)])
            picked = RNG.sample(names, k=RNG.randint(len(names) * 2 // 3, len(names)))
            for number, name in enumerate(picked, start=1):
                product_id += 1
                products.append(
                    [
                        product_id,
                        category_id,
                        group_id,
                        name,
                        RNG.choice(RARITIES[category_id]),
                        f"{number:03d}",
                    ]
                )
                for condition_id, *_ in CONDITIONS[:5]:
                    for language_id in languages[: RNG.randint(1, len(languages))]:
                        for printing_id in printings[: RNG.randint(1, len(printings))]:
                            sku_id += 1
                            skus.append(
                                [sku_id, product_id, condition_id, language_id, printing_id]
                            )
            # Sealed product: no card number, the "Unopened" condition, no printing variants.
            product_id += 1
            products.append(
                [product_id, category_id, group_id, f"{set_name} Booster Box", None, None]
            )
            sku_id += 1
            skus.append([sku_id, product_id, 6, 1, printings[0]])
    # A SKU of a condition identifier that has no row in conditions (spec 2.4).
    sku_id += 1
    skus.append([sku_id, products[0][0], MISSING_CONDITION, 1, 1])
    return groups, products, skus


# Products that arrive as a catalog API page dump (docs/contract.md §2), in the Pokémon set
# "Base Set".
API_PRODUCTS = [
    (300001, "Lugia VSTAR", "139/195", "Ultra Rare"),
    (300002, "Charizard", "4/102", "Holo Rare"),
    (300003, "Blastoise", "2/102", "Holo Rare"),
    (300004, "Energy Removal", "92/102", "Common"),
    (300005, "Base Set Booster Pack", None, None),
]


def build_api_dump(groups: list[list[object]]) -> tuple[dict[str, object], list[list[object]]]:
    """A products page as the catalog API returns it, and SKUs for its products."""
    group_id = next(g[0] for g in groups if g[2] == "Base Set")
    results = []
    skus: list[list[object]] = []
    for product_id, name, number, rarity in API_PRODUCTS:
        extended = (
            [{"name": "Number", "displayName": "Card Number", "value": number}] if number else []
        )
        if rarity:
            extended.append({"name": "Rarity", "displayName": "Rarity", "value": rarity})
        extended.append({"name": "CardText", "displayName": "Card Text", "value": "<p>…</p>"})
        results.append(
            {
                "productId": product_id,
                "name": name,
                "cleanName": name,
                "imageUrl": f"https://tcgplayer-cdn.tcgplayer.com/product/{product_id}_200w.jpg",
                "categoryId": 3,
                "groupId": group_id,
                "url": f"https://www.tcgplayer.com/product/{product_id}/pokemon-base-set-"
                + re.sub(r"[^a-z0-9]+", "-", clean_name(name).lower()),
                "modifiedOn": "2025-12-04T15:00:29.8",
                "imageCount": 1,
                "presaleInfo": {"isPresale": False, "releasedOn": None, "note": None},
                "extendedData": extended,
            }
        )
        for condition_id in (1, 2, 3):
            skus.append(
                [7_000_000 + product_id * 10 + condition_id, product_id, condition_id, 1, 1]
            )
    envelope = {"totalItems": len(results), "success": True, "errors": [], "results": results}
    return envelope, skus


def write_seller_portal(
    path: Path, skus: list[list[object]], products: dict[object, list[object]]
) -> None:
    """An 18-column Seller Portal export: zero-quantity placeholders, "My Store" reserves."""
    condition = {c[0]: c[1] for c in CONDITIONS}
    rows = []
    for sku in RNG.sample(skus[:-1], 60):
        product = products[sku[1]]
        price = price_for(product[4])
        total = RNG.choice([0, 0, 1, 2, 4])  # 0: a placeholder row, not a listing
        reserve = RNG.choice([0, 0, 1])
        rows.append(
            [
                sku[0],
                "Pokemon" if product[1] == 3 else "Magic",
                "",
                product[3],
                "",
                product[5] or "",
                product[4] or "",
                condition.get(sku[2], ""),
                f"{price:.2f}",
                "",
                "",
                f"{price:.2f}",
                total,
                0,
                f"{price:.2f}",
                "",
                reserve,
                f"{price + 1:.2f}" if reserve else "",
            ]
        )
    write_csv(path, SELLER_PORTAL_COLUMNS, rows)


def price_for(rarity: str | None) -> Decimal:
    base = {
        "Mythic": 18,
        "Secret Rare": 25,
        "Illustration Rare": 30,
        "Legendary": 40,
        "Enchanted": 60,
        "Majestic": 12,
        "Double Rare": 6,
        None: 90,
    }.get(rarity, 1)
    cents = int(RNG.lognormvariate(0, 1.1) * base * 100)
    # Round to common price points, which gives realistic ties (0.25, 0.99, 4.99, ...).
    if cents < 100:
        cents = RNG.choice([10, 25, 25, 49, 50, 99])
    elif RNG.random() < 0.5:
        cents = cents // 100 * 100 + 99
    return Decimal(cents) / 100


def build_listings(
    products: list[list[object]], skus: list[list[object]]
) -> list[dict[str, object]]:
    rarity = {p[0]: p[4] for p in products}
    category = {p[0]: p[1] for p in products}
    listings: list[dict[str, object]] = []
    custom_id = 900000
    for key, _name, size, channels, sells_custom, games in STORES:
        carried = [s for s in skus[:-1] if category[s[1]] in games]  # skus[-1]: listed below
        chosen = RNG.sample(carried, k=min(size, len(carried)))
        for index, sku in enumerate(chosen):
            channel = channels[1] if len(channels) > 1 and index % 5 == 4 else channels[0]
            price = price_for(rarity[sku[1]])
            listings.append(
                {
                    "storeKey": key if index % 13 else key.upper(),  # keys are case-insensitive
                    "channelId": channel,
                    "skuId": sku[0],
                    "price": price,
                    "quantity": RNG.choice([0, 1, 1, 1, 2, 3, 4, 8, 12]),
                    "isFeatured": RNG.choice([True, False, False, None]),
                    "isCustom": False,
                }
            )
            if sells_custom and index % 37 == 0:
                custom_id += 1
                urls = [
                    f"https://img.example-cards.test/{key}/{custom_id}-{n}.jpg"
                    for n in range(RNG.randint(0, 3))
                ]
                listings.append(
                    {
                        "storeKey": key,
                        "channelId": channel,
                        "skuId": sku[0],
                        "price": price,  # as the generic listing: a tie on price and skuId
                        "quantity": RNG.randint(1, 2),
                        "isFeatured": RNG.choice([True, None]),
                        "isCustom": True,
                        "storePriceCustomId": custom_id,
                        "title": RNG.choice(
                            [
                                f"Signed by the artist – {custom_id}",  # noqa: RUF001 - a real en dash
                                'Graded PSA 9 "Mint"',
                                "Misprint / off-center",
                                None,
                            ]
                        ),
                        "description": RNG.choice(
                            [
                                "Photos show the exact card.",
                                "Ships in a toploader.\nNo returns.",
                                None,
                            ]
                        ),
                        "mainImageUrl": urls[0] if urls else None,
                        "additionalImageUrls": urls[1:],
                    }
                )
    # The biggest store lists the SKU whose condition has no row in conditions.
    listings.append(
        {
            "storeKey": STORES[0][0],
            "channelId": 0,
            "skuId": skus[-1][0],
            "price": Decimal("3.50"),
            "quantity": 1,
            "isFeatured": None,
            "isCustom": False,
        }
    )
    return listings


def main() -> None:
    groups, products, skus = build_catalog()
    api_page, api_skus = build_api_dump(groups)
    skus[-1:-1] = api_skus  # the SKU with the unknown condition stays last
    (HERE / "catalog/products").mkdir(exist_ok=True)
    (HERE / "catalog/products/tcgplayer-api-page-1.json").write_text(
        json.dumps(api_page, ensure_ascii=False, indent=1) + "\n", encoding="utf-8"
    )
    write_csv(
        HERE / "catalog/categories.csv",
        [
            "categoryId",
            "name",
            "displayName",
            "modifiedOn",
            "seoCategoryName",
            "sealedLabel",
            "nonSealedLabel",
            "conditionGuideUrl",
            "isScannable",
            "popularity",
            "isDirect",
        ],
        [
            [
                c[0],
                c[1],
                c[2],
                c[7],
                c[3],
                c[4],
                c[5],
                f"https://store.tcgplayer.com/condition-guide/{c[3]}",
                c[0] in (1, 3),
                c[6],
                c[8],
            ]
            for c in CATEGORIES
        ],
    )
    write_csv(
        HERE / "catalog/groups.csv",
        [
            "groupId",
            "categoryId",
            "name",
            "abbreviation",
            "isSupplemental",
            "publishedOn",
            "modifiedOn",
        ],
        groups,
    )
    set_names = {g[0]: g[2] for g in groups}
    write_csv(
        HERE / "catalog/products.csv",
        [
            *("productId", "categoryId", "groupId", "name", "rarity", "number"),
            *("cleanName", "imageUrl", "url", "modifiedOn", "imageCount"),
            *("presaleInfo", "extendedData"),
        ],
        [[*p, *catalog_fields(p, str(set_names[p[2]]))] for p in products],
    )
    pq.write_table(
        pa.table(
            {
                name: [s[i] for s in skus]
                for i, name in enumerate(
                    ["skuId", "productId", "conditionId", "languageId", "printingId"]
                )
            },
            schema=pa.schema(
                [
                    ("skuId", pa.int64()),
                    ("productId", pa.int64()),
                    ("conditionId", pa.int64()),
                    ("languageId", pa.int32()),
                    ("printingId", pa.int32()),
                ]
            ),
        ),
        HERE / "catalog/skus.parquet",
        compression="zstd",
    )
    write_csv(
        HERE / "catalog/conditions.csv",
        ["conditionId", "name", "abbreviation", "displayOrder"],
        [list(c) for c in CONDITIONS],
    )
    with (HERE / "catalog/languages.ndjson").open("w", encoding="utf-8") as fh:
        for language_id, name, abbr in LANGUAGES:
            fh.write(
                json.dumps(
                    {"languageId": language_id, "name": name, "abbr": abbr}, ensure_ascii=False
                )
                + "\n"
            )
    write_csv(
        HERE / "catalog/printings.csv",
        ["printingId", "name", "foil", "displayOrder", "modifiedOn"],
        [[*p, order, printing_modified_on(p[0])] for order, p in enumerate(PRINTINGS, start=1)],
    )

    write_csv(HERE / "stores/stores.csv", ["storeKey", "name"], [[s[0], s[1]] for s in STORES])
    write_csv(
        HERE / "stores/excluded_categories.csv",
        ["storeKey", "channelId", "categoryId"],
        [["3d05ef67", 0, 2], ["3d05ef67", 1, 3], ["a1b2c3d4", "", 62], ["KardKastle", 1, 1]],
    )
    api_products = [
        [
            p["productId"],
            3,
            p["groupId"],
            p["name"],
            next((e["value"] for e in p["extendedData"] if e["name"] == "Rarity"), None),
            next((e["value"] for e in p["extendedData"] if e["name"] == "Number"), None),
        ]
        for p in api_page["results"]  # type: ignore[union-attr]
    ]
    listings = build_listings(products + api_products, skus)
    write_seller_portal(
        HERE / "stores/listings/card-cellar.csv", skus, {p[0]: p for p in products + api_products}
    )
    columns = TABLES_BY_NAME["listings"].column_names
    third = len(listings) // 3
    folder = HERE / "stores/listings"
    folder.mkdir(parents=True, exist_ok=True)
    write_csv(
        folder / "part-1.csv", columns, [[row.get(c) for c in columns] for row in listings[:third]]
    )
    with (folder / "part-2.ndjson").open("w", encoding="utf-8") as fh:
        for row in listings[third : 2 * third]:
            fh.write(
                json.dumps(
                    {k: (str(v) if isinstance(v, Decimal) else v) for k, v in row.items()},
                    ensure_ascii=False,
                )
                + "\n"
            )
    part3 = listings[2 * third :]
    pq.write_table(
        pa.table(
            {c: [row.get(c) for row in part3] for c in columns},
            schema=pa.schema(
                [
                    ("storeKey", pa.string()),
                    ("channelId", pa.int32()),
                    ("skuId", pa.int64()),
                    ("price", pa.decimal128(10, 2)),
                    ("quantity", pa.int32()),
                    ("isFeatured", pa.bool_()),
                    ("isCustom", pa.bool_()),
                    ("storePriceCustomId", pa.int64()),
                    ("title", pa.string()),
                    ("description", pa.string()),
                    ("mainImageUrl", pa.string()),
                    ("additionalImageUrls", pa.list_(pa.string())),
                ]
            ),
        ),
        folder / "part-3.parquet",
        compression="zstd",
    )


if __name__ == "__main__":
    main()
