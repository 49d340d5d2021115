"""The input contract: the raw tables, their declared columns and their row rules
(docs/contract.md §2). Nothing is auto-detected. `pipeline.transform.rules` makes the row checks
from these rules; the relational rules are in `sql/checks/`."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum


class Kind(StrEnum):
    """The type a raw value is parsed to (`pipeline.transform.rules.parsed`)."""

    INT32 = "INTEGER"
    INT64 = "BIGINT"
    TEXT = "VARCHAR"
    BOOL = "BOOLEAN"
    MONEY = "DECIMAL(18,2)"
    TIMESTAMP = "TIMESTAMP"
    TEXT_LIST = "VARCHAR[]"
    # A JSON object of the column's `fields`, a JSON array of them; staged as `Column.sql_type`.
    RECORD = "STRUCT"
    RECORD_LIST = "STRUCT[]"


# Kinds whose value is a JSON array or object (in NDJSON: nested JSON, or its text).
NESTED_KINDS = frozenset({Kind.TEXT_LIST, Kind.RECORD, Kind.RECORD_LIST})


STORE_KEY_PATTERN = "[A-Za-z0-9_-]{1,64}"
# Staging stores keys lower-case: the spelling of the site's paths.
STORED_KEY_PATTERN = STORE_KEY_PATTERN.replace("A-Z", "")


@dataclass(frozen=True)
class Column:
    name: str
    kind: Kind
    required: bool = False
    default: str | None = None  # applied to a missing column and to an empty cell alike
    non_negative: bool = False
    pattern: str | None = None  # full-match regular expression
    doc: str = ""  # the column's comment in raw.<table> ("as written") and staging.<table>
    # Its key is published only when the input carries the column (null where a row has none):
    # the category listing's live-only fields (docs/contract.md §6). Ingest records which ones
    # it saw.
    keyed: bool = False
    # A RECORD's keys (name, scalar kind); an object's other keys are ignored. A key missing or
    # null is a value: null.
    fields: tuple[Column, ...] = ()

    @property
    def staged_name(self) -> str:
        """The column's name in staging.<table>: snake_case."""
        return "".join("_" + c.lower() if c.isupper() else c for c in self.name)

    @property
    def sql_type(self) -> str:
        """The staged value's DuckDB type."""
        if self.kind not in (Kind.RECORD, Kind.RECORD_LIST):
            return str(self.kind)
        struct = ", ".join(f"{f.staged_name} {f.sql_type}" for f in self.fields)
        return f"STRUCT({struct})" + ("[]" if self.kind is Kind.RECORD_LIST else "")


@dataclass(frozen=True)
class Table:
    group: str  # folder under the input directory
    name: str  # raw.<name>, staging.<name>
    columns: tuple[Column, ...]
    optional: bool = False  # the whole table may be absent
    doc: str = ""
    key: tuple[str, ...] = ()  # unique key; every row of a duplicated key is rejected
    required_if: tuple[tuple[str, str], ...] = field(default=())  # (column, when-column is true)

    @property
    def column_names(self) -> list[str]:
        return [c.name for c in self.columns]

    @property
    def required_columns(self) -> list[str]:
        """Columns that must be in every file's header (required and without a default)."""
        return [c.name for c in self.columns if c.required and c.default is None]


def _c(name: str, kind: Kind, doc: str = "", **kw: object) -> Column:
    return Column(name, kind, doc=doc, **kw)  # type: ignore[arg-type]


# The store key, the same column in each stores table.
STORE_KEY = _c(
    "storeKey",
    Kind.TEXT,
    "Store key (case-insensitive: lower-case from staging on)",
    required=True,
    pattern=STORE_KEY_PATTERN,
)

TABLES: tuple[Table, ...] = (
    Table(
        "catalog",
        "categories",
        (
            _c("categoryId", Kind.INT32, "Category identifier", required=True),
            _c("name", Kind.TEXT, "Category name", required=True),
            _c("displayName", Kind.TEXT, "Display name"),
            _c("modifiedOn", Kind.TIMESTAMP, "Last modification time (no zone)"),
            _c("seoCategoryName", Kind.TEXT, "SEO name"),
            _c("categoryDescription", Kind.TEXT, "Description (marketing text)", keyed=True),
            _c("categoryPageTitle", Kind.TEXT, "Title of the category's page", keyed=True),
            _c("sealedLabel", Kind.TEXT, "Label for sealed products"),
            _c("nonSealedLabel", Kind.TEXT, "Label for singles"),
            _c("conditionGuideUrl", Kind.TEXT, "URL of the condition guide"),
            _c("isScannable", Kind.BOOL, "Whether cards of this category can be scanned"),
            _c("popularity", Kind.INT32, "Popularity rank value"),
            _c("isDirect", Kind.BOOL, "Whether the category is sold through Direct", keyed=True),
        ),
        doc="Game categories (Magic, Pokémon, ...)",
        key=("categoryId",),
    ),
    Table(
        "catalog",
        "groups",
        (
            _c("groupId", Kind.INT64, "Group (set) identifier", required=True),
            _c("categoryId", Kind.INT32, "Category of the group", required=True),
            _c("name", Kind.TEXT, "Group name", required=True),
            _c("abbreviation", Kind.TEXT, "Set code"),
            _c("isSupplemental", Kind.BOOL, "Whether the group is a supplemental set"),
            _c("publishedOn", Kind.TIMESTAMP, "Publication time (no zone)"),
            _c("modifiedOn", Kind.TIMESTAMP, "Last modification time (no zone)"),
        ),
        doc="Groups (sets) of a category",
        key=("groupId",),
    ),
    Table(
        "catalog",
        "products",
        (
            _c("productId", Kind.INT64, "Product identifier", required=True),
            _c("categoryId", Kind.INT32, "Category of the product", required=True),
            _c("groupId", Kind.INT64, "Group of the product", required=True),
            _c("name", Kind.TEXT, "Product name", required=True),
            _c("rarity", Kind.TEXT, "Rarity label (may be null)"),
            _c("number", Kind.TEXT, "Card number (may be null)"),
            _c("cleanName", Kind.TEXT, "Name without punctuation, as the catalog spells it"),
            _c("imageUrl", Kind.TEXT, "URL of the product's image"),
            _c("url", Kind.TEXT, "URL of the product's page on the marketplace"),
            _c("modifiedOn", Kind.TIMESTAMP, "Last modification time (no zone)"),
            _c("imageCount", Kind.INT32, "Number of images of the product"),
            _c(
                "presaleInfo",
                Kind.RECORD,
                "Presale state: on presale or not, release time (no zone), a note",
                fields=(
                    _c("isPresale", Kind.BOOL),
                    _c("releasedOn", Kind.TIMESTAMP),
                    _c("note", Kind.TEXT),
                ),
            ),
            _c(
                "extendedData",
                Kind.RECORD_LIST,
                "Extended fields (card number, rarity, text, ...) as listed, values as text",
                fields=(
                    _c("name", Kind.TEXT),
                    _c("displayName", Kind.TEXT),
                    _c("value", Kind.TEXT),
                ),
            ),
        ),
        doc="Products (cards, sealed items)",
        key=("productId",),
    ),
    Table(
        "catalog",
        "skus",
        (
            _c("skuId", Kind.INT64, "SKU identifier", required=True),
            _c("productId", Kind.INT64, "Product of the SKU", required=True),
            _c(
                "conditionId",
                Kind.INT64,
                "Condition (may have no row in conditions)",
                required=True,
            ),
            _c("languageId", Kind.INT32, "Language (may have no row in languages)", required=True),
            _c("printingId", Kind.INT32, "Printing (may have no row in printings)", required=True),
        ),
        doc="SKUs: product x condition x language x printing",
        key=("skuId",),
    ),
    Table(
        "catalog",
        "conditions",
        (
            _c("conditionId", Kind.INT64, "Condition identifier", required=True),
            _c("name", Kind.TEXT, "Condition name", required=True),
            _c("abbreviation", Kind.TEXT, "Short name"),
            _c("displayOrder", Kind.INT32, "Order in condition lists"),
        ),
        doc="Card conditions",
        key=("conditionId",),
    ),
    Table(
        "catalog",
        "languages",
        (
            _c("languageId", Kind.INT32, "Language identifier", required=True),
            _c("name", Kind.TEXT, "Language name", required=True),
            _c("abbr", Kind.TEXT, "Abbreviation (may be null)"),
        ),
        doc="Card languages",
        key=("languageId",),
    ),
    Table(
        "catalog",
        "printings",
        (
            _c("printingId", Kind.INT32, "Printing identifier", required=True),
            _c("name", Kind.TEXT, "Printing name", required=True),
            _c("foil", Kind.BOOL, "Whether the printing is foil (a null is published as false)"),
            _c("displayOrder", Kind.INT32, "Order in printing lists"),
            _c("modifiedOn", Kind.TIMESTAMP, "Last modification time (no zone)"),
        ),
        doc="Printings (Normal, Foil, Holofoil, ...)",
        key=("printingId",),
    ),
    Table(
        "stores",
        "stores",
        (
            STORE_KEY,
            _c("name", Kind.TEXT, "Store name"),
        ),
        optional=True,
        doc="Known stores (a store with listings is known without a row here)",
    ),
    Table(
        "stores",
        "excluded_categories",
        (
            STORE_KEY,
            _c(
                "channelId",
                Kind.INT32,
                "Sales channel the exclusion applies to",
                required=True,
                default="0",
            ),
            _c("categoryId", Kind.INT32, "Excluded category", required=True),
        ),
        optional=True,
        doc="Categories a store excludes from a channel",
    ),
    Table(
        "stores",
        "listings",
        (
            STORE_KEY,
            _c(
                "channelId",
                Kind.INT32,
                "Sales channel (0: the default marketplace channel)",
                required=True,
                default="0",
            ),
            _c("skuId", Kind.INT64, "Listed SKU", required=True),
            _c(
                "price",
                Kind.MONEY,
                "Price, exact, at most two decimals",
                required=True,
                non_negative=True,
            ),
            _c(
                "quantity",
                Kind.INT32,
                "Quantity for sale (0: listed but not for sale)",
                required=True,
                non_negative=True,
            ),
            _c("isFeatured", Kind.BOOL, "Featured flag (may be null)"),
            _c(
                "isCustom",
                Kind.BOOL,
                "Whether this is a custom listing",
                required=True,
                default="false",
            ),
            _c(
                "storePriceCustomId",
                Kind.INT64,
                "Custom listing identifier (custom listings only)",
            ),
            _c("title", Kind.TEXT, "Custom listing title"),
            _c("description", Kind.TEXT, "Custom listing description"),
            _c("mainImageUrl", Kind.TEXT, "Custom listing main image URL"),
            _c("additionalImageUrls", Kind.TEXT_LIST, "Custom listing further image URLs"),
        ),
        doc="Store inventory listings",
        required_if=(("storePriceCustomId", "isCustom"),),
    ),
)

TABLES_BY_NAME: dict[str, Table] = {t.name: t for t in TABLES}
