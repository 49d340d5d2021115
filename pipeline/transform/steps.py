"""The build's steps, in order: the one place that says which SQL file runs when.

`Staging` validates a raw table, builds its staging table and runs its checks; `Model` builds
one table. `QUERIES` run per request; `PARTS` are CTEs that queries include; `STATEMENTS` are
the SELECTs that Python wraps in an INSERT, COPY or CREATE."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from pipeline.api.catalog import CATALOG_OPERATIONS
from pipeline.api.operations import STORE_OPERATIONS
from pipeline.db import SqlFile

Severity = Literal["reject", "warn"]


@dataclass(frozen=True)
class Check:
    name: str
    severity: Severity = "reject"

    @property
    def file(self) -> SqlFile:
        return SqlFile(f"checks/{self.name}")


@dataclass(frozen=True)
class Staging:
    table: str
    checks: tuple[Check, ...] = field(default=())
    indexes: tuple[str, ...] = ()  # as a Model's

    @property
    def file(self) -> SqlFile:
        return SqlFile(f"staging/{self.table}")


@dataclass(frozen=True)
class Model:
    path: str
    # Columns a live answer looks rows up by, a few ids at a time: each gets an ART index
    # (`transform.create_indexes`), so that a lookup reads its rows, not the table.
    indexes: tuple[str, ...] = ()

    @property
    def file(self) -> SqlFile:
        return SqlFile(self.path)


Step = Staging | Model

# Parents before children: a check may only read staging tables that are already clean.
STEPS: tuple[Step, ...] = (
    Staging("categories"),
    Staging("groups", (Check("groups_unknown_category"),)),
    Staging("products", (Check("products_unknown_category"), Check("products_unknown_group"))),
    Staging("conditions"),
    Staging("languages"),
    Staging("printings"),
    Staging(
        "skus",
        (
            Check("skus_unknown_product"),
            Check("skus_unknown_condition", "warn"),
            Check("skus_unknown_language", "warn"),
            Check("skus_unknown_printing", "warn"),
        ),
        indexes=("sku_id", "product_id"),
    ),
    Staging("stores"),
    Staging("excluded_categories", (Check("excluded_categories_unknown_category", "warn"),)),
    Staging("listings", (Check("listings_unknown_sku"), Check("listings_duplicate_key"))),
    Model("marts/sku"),
    Model("marts/store"),
    Model("marts/listing"),
    Model("marts/store_product"),
    Model("marts/sku_market", indexes=("sku_id",)),
    Model("marts/product_market"),
    Model("export/product"),
    Model("export/sku_body"),
    Model("export/sku"),
    Model("export/category"),
    Model("export/catalog_group", indexes=("group_id",)),
    Model("export/catalog_product", indexes=("product_id",)),
    Model("export/condition"),
    Model("export/product_price", indexes=("product_id",)),
    Model("export/search_manifest"),
)

# The steps that read the stores' tables (their rows partition by store: a shard of stores runs
# them over its rows alone), and the catalog's, which every shard shares (`pipeline.distributed`).
STORE_TABLES = ("stores", "excluded_categories", "listings")
STORE_MARTS = ("marts/store", "marts/listing", "marts/store_product")
STORE_STEPS: tuple[Step, ...] = tuple(
    s
    for s in STEPS
    if (s.table if isinstance(s, Staging) else s.path) in (*STORE_TABLES, *STORE_MARTS)
)
# The steps over every store's listings together (the marketplace's figures): a Ray night runs
# them once the shards' tables are gathered.
MARKET_MODELS = ("marts/sku_market", "marts/product_market", "export/product_price")
MARKET_STEPS: tuple[Step, ...] = tuple(
    s for s in STEPS if isinstance(s, Model) and s.path in MARKET_MODELS
)
CATALOG_STEPS: tuple[Step, ...] = tuple(
    s for s in STEPS if s not in STORE_STEPS and s not in MARKET_STEPS
)

STORE_INVENTORY = SqlFile("api/store_inventory_products")
# The summary's page cut from a store's products that `pipeline serve` keeps; the CTEs that cut
# it, which both files include.
STORE_INVENTORY_KEPT = SqlFile("api/store_inventory_kept")
STORE_INVENTORY_PAGE = SqlFile("api/parts/store_inventory_page")
# A product's entries, which the skus and quantity operations include; a store's entries of every
# product, which `pipeline serve` keeps; and the part its queries include in their place then.
STORE_PRODUCT_ENTRIES = SqlFile("api/parts/store_product_entries")
STORE_ENTRIES = SqlFile("api/store_entries")
KEPT_PRODUCT_ENTRIES = SqlFile("api/parts/kept_product_entries")
CATALOG_CATEGORIES = SqlFile("api/catalog_categories")
# The catalog's search (docs/contract.md §12), a POST answered live.
CATALOG_SEARCH = SqlFile("api/catalog_search")
# The bulk files' rows, every category's at once (`export.pages.bulk`).
BULK_ROWS = SqlFile("api/bulk_rows")
# The store's other inventory operations (docs/contract.md §5), by operation.
OPERATION_SQL = {op: SqlFile(op.sql) for op in STORE_OPERATIONS}
# The catalog and marketplace price operations (docs/contract.md §7), by operation.
CATALOG_SQL = {op: SqlFile(op.sql) for op in CATALOG_OPERATIONS}
QUERIES: tuple[SqlFile, ...] = (
    STORE_INVENTORY,
    STORE_INVENTORY_KEPT,
    STORE_ENTRIES,
    CATALOG_CATEGORIES,
    CATALOG_SEARCH,
    BULK_ROWS,
    *OPERATION_SQL.values(),
    *CATALOG_SQL.values(),
)
# Parts of queries, included by them (`-- @include`), never run alone.
PARTS: tuple[SqlFile, ...] = (
    STORE_INVENTORY_PAGE,
    STORE_PRODUCT_ENTRIES,
    KEPT_PRODUCT_ENTRIES,
    SqlFile("api/parts/catalog_product_json"),
    SqlFile("api/parts/extended_entries"),
)

# meta.build_run's columns, and the build history's queries (`export.records.history`).
BUILD_RUN = SqlFile("meta/build_run")
HISTORY_FROM_FILE = SqlFile("history/from_file")
HISTORY_FROM_WAREHOUSE = SqlFile("history/from_warehouse")
HISTORY_THIS_BUILD = SqlFile("history/this_build")
HISTORY_RECENT_RUNS = SqlFile("history/recent_runs")
HISTORY_BASELINE = SqlFile("history/baseline")
HISTORY_PUBLISHED = SqlFile("history/published")
# Each published night's market figures, kept across nights (`export.records.nights`): the
# night's rows of each table of history.*, and the builds whose nights may be listed.
NIGHT_TABLES = (
    SqlFile("nights/sku_market"),
    SqlFile("nights/product_market"),
    SqlFile("nights/store_volume"),
)
NIGHTS_PUBLISHED = SqlFile("nights/published")
# The queries that compose a Ray night's release files (`distributed.compose`).
RELEASE_NO_ROWS = SqlFile("release/no_rows")
RELEASE_MANIFEST_ROWS = SqlFile("release/manifest_rows")
RELEASE_CARRIED_STORES = SqlFile("release/carried_stores")
RELEASE_ROWS = SqlFile("release/rows")
RELEASE_REPEATED_PATH = SqlFile("release/repeated_path")
RELEASE_SORTED_ROWS = SqlFile("release/sorted_rows")
RELEASE_CHANGED = SqlFile("release/changed")
RELEASE_REMOVED = SqlFile("release/removed")
RELEASE_COUNTS = SqlFile("release/counts")
STATEMENTS: tuple[SqlFile, ...] = (
    BUILD_RUN,
    HISTORY_FROM_FILE,
    HISTORY_FROM_WAREHOUSE,
    HISTORY_THIS_BUILD,
    HISTORY_RECENT_RUNS,
    HISTORY_BASELINE,
    HISTORY_PUBLISHED,
    *NIGHT_TABLES,
    NIGHTS_PUBLISHED,
    RELEASE_NO_ROWS,
    RELEASE_MANIFEST_ROWS,
    RELEASE_CARRIED_STORES,
    RELEASE_ROWS,
    RELEASE_REPEATED_PATH,
    RELEASE_SORTED_ROWS,
    RELEASE_CHANGED,
    RELEASE_REMOVED,
    RELEASE_COUNTS,
)


def all_sql_files() -> list[SqlFile]:
    """Every SQL file the build and the API use, each once, in step order."""
    files: list[SqlFile] = []
    for step in STEPS:
        files.append(step.file)
        if isinstance(step, Staging):
            files += [c.file for c in step.checks]
    return files + list(QUERIES) + list(PARTS) + list(STATEMENTS)
