"""`pipeline generate`: a realistic synthetic input directory of any size, deterministic.

Polars expressions build it with no Python loop per row, so 10M listings take under a minute.
At full scale it has about 500k products, and store sizes follow a rank-size power law."""

from __future__ import annotations

from pathlib import Path

import polars as pl

CONDITIONS = [
    (1, "Near Mint", "NM"),
    (2, "Lightly Played", "LP"),
    (3, "Moderately Played", "MP"),
    (4, "Heavily Played", "HP"),
    (5, "Damaged", "DMG"),
]
LANGUAGES = [
    (1, "English", "EN"),
    (2, "Chinese (S)", "CS"),
    (3, "Chinese (T)", "CT"),
    (4, "French", "FR"),
    (5, "German", "DE"),
    (6, "Italian", "IT"),
    (7, "Japanese", "JP"),
    (8, "Korean", "KO"),
    (9, "Portuguese", "PT"),
    (10, "Russian", "RU"),
    (11, "Spanish", "ES"),
    (12, "Phyrexian", None),
]
PRINTINGS = [
    (1, "Normal", False),
    (2, "Foil", True),
    (3, "Holofoil", True),
    (4, "Reverse Holofoil", True),
    (5, "1st Edition", False),
]
RARITIES = ["Common", "Uncommon", "Rare", "Mythic", "Special", "Secret Rare"]
WORDS = [
    "Dragon",
    "Angel",
    "Bolt",
    "Sword",
    "Tutor",
    "Vault",
    "Éclair",
    "Flabébé",
    "Sol",
    "Ring",
    "Lotus",
    "Ritual",
    "Grunt",
    "Elf",
    "Mage",
    "Knight",
    "ピカチュウ",
    "Ach! Hans",
    '"Quoted"',
    "Æther",
    "Jötun",
    "Séance",
    "Wurm",
    "Golem",
]
LISTINGS_PER_FILE = 2_000_000


def _rand(index: pl.Expr, salt: int, modulo: int) -> pl.Expr:
    """A deterministic pseudo-random integer in [0, modulo) for each row."""
    return ((index + salt * 1_000_003).hash(seed=salt) % modulo).cast(pl.Int64)


def catalog_size(listings: int) -> tuple[int, int, int]:
    """(categories, groups, products) for a listing count: the full catalog from 10M on."""
    products = max(500, min(500_000, listings // 20))
    return max(3, min(80, products // 2_000)), max(10, products // 16), products


def store_sizes(stores: int, listings: int, cap: int = 200_000) -> pl.DataFrame:
    """Heavily skewed: rank r gets a share ~ 1/(r+20)^1.6, no store above `cap` (what a capped
    store would have had goes to the others in proportion), summing exactly to `listings`."""
    rank = pl.int_range(stores, eager=True)
    weight = (1.0 / (rank + 20).cast(pl.Float64).pow(1.6)).to_list()
    size = [w / sum(weight) * listings for w in weight]
    for _ in range(20):  # water-filling: cap, then spread the excess over the uncapped stores
        excess = sum(max(0.0, x - cap) for x in size)
        free = sum(x for x in size if x < cap)
        if excess < 1 or free == 0:
            break
        size = [min(x, cap) if x >= cap else x * (1 + excess / free) for x in size]
    whole = [max(1, int(x)) for x in size]
    whole[next(i for i, x in enumerate(whole) if x < cap)] += listings - sum(whole)
    return pl.DataFrame({"rank": rank, "size": pl.Series(whole, dtype=pl.Int64)}).with_columns(
        storeKey=pl.format("store-{}", pl.col("rank").cast(pl.String).str.pad_start(5, "0"))
    )


def generate(output: Path, stores: int, listings: int, seed: int = 1) -> dict[str, int]:
    """Write the input directory; returns the count of each table's rows."""
    n_categories, n_groups, n_products = catalog_size(listings)
    catalog, store_dir = output / "catalog", output / "stores"
    catalog.mkdir(parents=True, exist_ok=True)
    (store_dir / "listings").mkdir(parents=True, exist_ok=True)
    n_skus = _write_catalog(catalog, n_categories, n_groups, n_products, seed)
    sizes = store_sizes(stores, listings)
    _write_stores(store_dir, sizes, n_categories, seed)
    total = _write_listings(store_dir / "listings", _listings(sizes, n_skus, seed))
    return {
        "categories": n_categories,
        "groups": n_groups,
        "products": n_products,
        "skus": n_skus,
        "stores": stores,
        "listings": total,
    }


def _write_catalog(
    catalog: Path, n_categories: int, n_groups: int, n_products: int, seed: int
) -> int:
    """The catalog's files, in the formats a real input mixes; returns the count of SKUs."""
    categories = pl.select(
        categoryId=pl.int_range(1, n_categories + 1, dtype=pl.Int64)
    ).with_columns(
        name=pl.format("Game {}", pl.col("categoryId")),
        displayName=pl.format("Trading Card Game {}", pl.col("categoryId")),
        modifiedOn=pl.lit("2025-06-12T19:08:33.837"),
        popularity=pl.col("categoryId") * 10,
    )
    categories.write_csv(catalog / "categories.csv")

    groups = pl.select(groupId=pl.int_range(1, n_groups + 1, dtype=pl.Int64)).with_columns(
        categoryId=1 + _rand(pl.col("groupId"), seed + 1, n_categories),
        name=pl.format("Set {}", pl.col("groupId")),
        abbreviation=pl.format("S{}", pl.col("groupId")),
    )
    groups.write_csv(catalog / "groups.csv")
    products = _products(groups, n_groups, n_products, seed)
    products.write_csv(catalog / "products.csv")
    skus = _skus(products, seed)
    skus.write_parquet(catalog / "skus.parquet")
    pl.DataFrame(
        CONDITIONS, schema=["conditionId", "name", "abbreviation"], orient="row"
    ).write_csv(catalog / "conditions.csv")
    pl.DataFrame(LANGUAGES, schema=["languageId", "name", "abbr"], orient="row").write_ndjson(
        catalog / "languages.ndjson"
    )
    pl.DataFrame(PRINTINGS, schema=["printingId", "name", "foil"], orient="row").write_csv(
        catalog / "printings.csv"
    )
    return skus.height


def _products(groups: pl.DataFrame, n_groups: int, n_products: int, seed: int) -> pl.DataFrame:
    """Products spread over the groups, with names of two words, a rarity and a number."""
    words = pl.Series(WORDS)
    return (
        pl.select(productId=pl.int_range(1, n_products + 1, dtype=pl.Int64))
        .with_columns(groupId=1 + _rand(pl.col("productId"), seed + 2, n_groups))
        .join(
            groups.select("groupId", "categoryId"), on="groupId", how="left", maintain_order="left"
        )
        .with_columns(
            name=pl.format(
                "{} {} #{}",
                pl.lit(words).gather(_rand(pl.col("productId"), seed + 3, len(WORDS))),
                pl.lit(words).gather(_rand(pl.col("productId"), seed + 4, len(WORDS))),
                pl.col("productId"),
            ),
            rarity=pl.lit(pl.Series(RARITIES)).gather(
                _rand(pl.col("productId"), seed + 5, len(RARITIES))
            ),
            number=pl.when(_rand(pl.col("productId"), seed + 6, 10) == 0)
            .then(None)
            .otherwise(pl.col("productId").mod(400).cast(pl.String).str.pad_start(3, "0")),
        )
    )


def _skus(products: pl.DataFrame, seed: int) -> pl.DataFrame:
    """Every product's SKUs: conditions x (1-3 languages) x (1-2 printings)."""
    return (
        products.select(
            "productId",
            languages=1 + _rand(pl.col("productId"), seed + 7, 3),
            printings=1 + _rand(pl.col("productId"), seed + 8, 2),
        )
        .with_columns(combo=pl.int_ranges(0, 5 * pl.col("languages") * pl.col("printings")))
        .explode("combo")
        .select(
            skuId=1 + pl.int_range(pl.len(), dtype=pl.Int64),
            productId="productId",
            conditionId=1 + pl.col("combo") % 5,
            languageId=1 + (pl.col("combo") // 5) % pl.col("languages") * 6 % 12,
            printingId=1 + (pl.col("combo") // (5 * pl.col("languages"))) * 2,
        )
    )


def _write_stores(store_dir: Path, sizes: pl.DataFrame, n_categories: int, seed: int) -> None:
    """The stores file, and a category excluded by every eleventh store."""
    sizes.select("storeKey", name=pl.format("Store number {}", pl.col("rank"))).write_csv(
        store_dir / "stores.csv"
    )
    sizes.filter(pl.col("rank") % 11 == 3).select(
        "storeKey",
        channelId=pl.lit(0),
        categoryId=1 + _rand(pl.col("rank"), seed + 9, n_categories),
    ).write_csv(store_dir / "excluded_categories.csv")


def _listings(sizes: pl.DataFrame, n_skus: int, seed: int) -> pl.DataFrame:
    """Each store's listings, `size` of them: distinct SKUs, offset + k * stride (mod the SKU
    count), a second channel on every seventh store, and 1% custom copies."""
    stride = next(p for p in (1_000_003, 999_983, 7_919, 101, 1) if n_skus % p != 0)
    rows = (
        sizes.with_columns(
            k=pl.int_ranges(0, pl.col("size")), start=_rand(pl.col("rank"), seed + 10, n_skus)
        )
        .explode("k")
        .with_columns(n=pl.int_range(pl.len(), dtype=pl.Int64))
        .select(
            "storeKey",
            channelId=pl.when((pl.col("rank") % 7 == 0) & (pl.col("k") % 5 == 4))
            .then(1)
            .otherwise(0),
            skuId=1 + (pl.col("start") + pl.col("k") * stride) % n_skus,
            price=(
                (
                    _rand(pl.col("n"), seed + 11, 100) ** 3 // 400
                    + _rand(pl.col("n"), seed + 12, 4) * 25
                    + 10
                ).cast(pl.Decimal(12, 2))
                / 100
            ).cast(pl.Decimal(12, 2)),
            quantity=_rand(pl.col("n"), seed + 13, 9).cast(pl.Int32),
            isFeatured=pl.when(_rand(pl.col("n"), seed + 14, 3) == 0)
            .then(None)
            .otherwise(_rand(pl.col("n"), seed + 15, 2) == 1),
            isCustom=pl.lit(False),
            storePriceCustomId=pl.lit(None, pl.Int64),
            title=pl.lit(None, pl.String),
            n="n",
        )
    )
    custom = rows.filter(pl.col("n") % 100 == 7).with_columns(
        isCustom=pl.lit(True),
        storePriceCustomId=10_000_000 + pl.col("n"),
        title=pl.format("Graded copy {}", pl.col("n")),
        quantity=pl.lit(1, pl.Int32),
    )
    return pl.concat([rows, custom]).drop("n")


def _write_listings(folder: Path, listings: pl.DataFrame) -> int:
    """The listings as Parquet files of LISTINGS_PER_FILE rows; returns their count."""
    for part, start in enumerate(range(0, listings.height, LISTINGS_PER_FILE)):
        listings.slice(start, LISTINGS_PER_FILE).write_parquet(
            folder / f"part-{part:03d}.parquet", compression="zstd"
        )
    return listings.height
