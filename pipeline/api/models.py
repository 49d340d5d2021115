"""Response models of the published API; every published page must parse into them, and
`pipeline.api.docs` generates the OpenAPI document from them."""

from __future__ import annotations

from decimal import Decimal
from typing import Annotated, Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, StrictStr, model_validator
from pydantic.json_schema import WithJsonSchema

from pipeline.api.params import INT32, INT64
from pipeline.db import TIME_PATTERN

Int32 = Annotated[
    StrictInt,
    Field(ge=INT32[0], le=INT32[1]),
    WithJsonSchema({"type": "integer", "format": "int32"}),
]
Int64 = Annotated[
    StrictInt,
    Field(ge=INT64[0], le=INT64[1]),
    WithJsonSchema({"type": "integer", "format": "int64"}),
]
Money = Annotated[
    Decimal,
    Field(ge=0, decimal_places=2),
    WithJsonSchema({"type": "number", "format": "double"}),
]
T = TypeVar("T")

STRICT = ConfigDict(extra="forbid")
_GIVEN = "Present when the categories input has this column; null where a row has none."
# A time as the pages and the live service write it (`pipeline.db.json_time`).
Time = Annotated[StrictStr, Field(pattern=TIME_PATTERN)]
TIME_DOC = (
    "No zone; the fraction without trailing zeros, and no dot when it is zero, as the live "
    "service writes it: 2025-11-19T15:58:35.27, 2022-11-11T00:00:00."
)


def _no_default(schema: dict[str, Any]) -> None:
    schema.pop("default", None)


def absent(description: str) -> Any:
    """A key that may be left out of an answer: optional in the document, with no default
    (a generator such as openapi-typescript reads a default as "always present"). Absent, its
    value here is None."""
    return Field(default=None, description=description, json_schema_extra=_no_default)


class Condition(BaseModel):
    model_config = STRICT
    conditionId: Int64 = Field(description="May be an invalid or deprecated condition identifier.")
    name: StrictStr | None = Field(description="Condition name; null for an unknown condition.")


class Language(BaseModel):
    model_config = STRICT
    languageId: Int32 = Field(description="Language identifier.")
    name: StrictStr | None = Field(description="Language name; null for an unknown language.")
    abbr: StrictStr | None = Field(description="Abbreviation. May be null.")


_NO_IMAGES = "Custom listings only; [] when there are none."
CUSTOM_KEYS = ("storePriceCustomId", "title", "description", "mainImageUrl", "additionalImageUrls")


class _Listing(BaseModel):
    """An entry of a listing: a custom one carries the five custom keys, a generic one none."""

    model_config = STRICT  # the fields are the subclasses', in their documents' order

    @model_validator(mode="after")
    def _custom_keys(self) -> _Listing:
        present = [k for k in CUSTOM_KEYS if k in self.model_fields_set]
        if getattr(self, "isCustom"):  # noqa: B009
            if len(present) != len(CUSTOM_KEYS):
                raise ValueError(f"custom entry lacks {set(CUSTOM_KEYS) - set(present)}")
            if any(getattr(self, k) is None for k in ("storePriceCustomId", "additionalImageUrls")):
                raise ValueError("custom entry needs storePriceCustomId and additionalImageUrls")
        elif present:
            raise ValueError(f"generic entry has custom keys {present}")
        return self


def _custom(what: str = "Custom listings only.") -> Any:
    return absent(what)


class Sku(_Listing):
    """One SKU entry; custom listings carry five more keys, generic ones never do."""

    skuId: Int64 = Field(description="SKU identifier.")
    storePriceCustomId: Int64 | None = _custom()
    condition: Condition
    language: Language
    foil: StrictBool = Field(description="Whether the SKU is foil.")
    price: Money = Field(description="Price; may have decimals.")
    quantity: Int32 = Field(ge=1, description="Quantity available.")
    isFeatured: StrictBool | None = Field(description="May be null.")
    isCustom: StrictBool = Field(description="Whether the listing is a custom listing.")
    title: StrictStr | None = _custom()
    description: StrictStr | None = _custom()
    mainImageUrl: StrictStr | None = _custom()
    additionalImageUrls: list[StrictStr] | None = _custom(_NO_IMAGES)


class QuantitySku(_Listing):
    """An entry of the product quantity operation."""

    skuId: Int64 = Field(description="SKU identifier.")
    storePriceCustomId: Int64 | None = _custom()
    quantity: Int32 = Field(ge=1, description="Quantity available.")
    isCustom: StrictBool = Field(description="Whether the listing is a custom listing.")
    title: StrictStr | None = _custom()
    description: StrictStr | None = _custom()
    mainImageUrl: StrictStr | None = _custom()
    additionalImageUrls: list[StrictStr] | None = _custom(_NO_IMAGES)


class ProductQuantity(BaseModel):
    model_config = STRICT
    productId: Int64 = Field(description="Product identifier.")
    totalQuantity: Int32 = Field(ge=1, description="The matching entries' quantities, summed.")
    skus: list[QuantitySku] = Field(min_length=1, description="In the summary's SKU order.")


class SkuListPrice(_Listing):
    """A listing of the store's price list, whatever its quantity."""

    skuListPriceId: StrictStr = Field(description='"<skuId>", or "<skuId>-<storePriceCustomId>".')
    skuId: Int64 = Field(description="SKU identifier.")
    storePriceCustomId: Int64 | None = _custom()
    price: Money = Field(description="Price; may have decimals.")
    isCustom: StrictBool = Field(description="Whether the listing is a custom listing.")
    title: StrictStr | None = _custom()
    description: StrictStr | None = _custom()
    mainImageUrl: StrictStr | None = _custom()
    additionalImageUrls: list[StrictStr] | None = _custom(_NO_IMAGES)


class StoreCategory(BaseModel):
    model_config = STRICT
    categoryId: Int32
    name: StrictStr


class StoreGroup(BaseModel):
    """A group; fields the input lacks are null."""

    model_config = STRICT
    groupId: Int64
    name: StrictStr
    abbreviation: StrictStr | None
    isSupplemental: StrictBool | None
    publishedOn: Time | None = Field(description=TIME_DOC)
    modifiedOn: Time | None = Field(description=TIME_DOC)
    categoryId: Int32


class StoreProduct(BaseModel):
    model_config = STRICT
    productId: Int64 = Field(description="Product identifier.")
    name: StrictStr = Field(description="Product name.")
    category: StrictStr = Field(description="Name of the category of the product.")
    group: StrictStr = Field(description="Name of the group of the product.")
    rarity: StrictStr | None = Field(description="Rarity label. May be null.")
    number: StrictStr | None = Field(description="Card number. May be null.")
    skuCount: Int32 = Field(ge=1, description="Number of SKU entries of the product.")
    lowestPrice: Money = Field(description="Lowest price among all its SKU entries.")
    skus: list[Sku] = Field(description="At most skuLimit entries, by price descending.")

    @model_validator(mode="after")
    def _consistent(self) -> StoreProduct:
        if len(self.skus) > self.skuCount:
            raise ValueError("more skus than skuCount")
        if self.skus and min(s.price for s in self.skus) < self.lowestPrice:
            raise ValueError("a sku is cheaper than lowestPrice")
        return self


class Category(BaseModel):
    """A category; the live service's keys (categoryDescription, categoryPageTitle, isDirect)
    are on every category when the input carries their column, and absent otherwise."""

    model_config = STRICT
    categoryId: Int32
    name: StrictStr
    modifiedOn: Time | None = Field(description=TIME_DOC)
    displayName: StrictStr | None
    seoCategoryName: StrictStr | None
    categoryDescription: StrictStr | None = absent(_GIVEN)
    categoryPageTitle: StrictStr | None = absent(_GIVEN)
    sealedLabel: StrictStr | None
    nonSealedLabel: StrictStr | None
    conditionGuideUrl: StrictStr | None
    isScannable: StrictBool | None
    popularity: Int32 | None
    isDirect: StrictBool | None = absent(_GIVEN)


class PagedResponse(BaseModel, Generic[T]):
    """The paged envelope of a successful response (spec 2.1)."""

    model_config = STRICT
    totalItems: Int32 = Field(ge=1, description="All matching items, not only this page's.")
    success: Literal[True]
    errors: list[StrictStr] = Field(max_length=0)
    results: list[T] = Field(min_length=1)


class ResultsResponse(BaseModel, Generic[T]):
    """The envelope of an answer that is not a page: no totalItems."""

    model_config = STRICT
    success: Literal[True]
    errors: list[StrictStr] = Field(max_length=0)
    results: list[T] = Field(min_length=1)


class ErrorResponse(BaseModel):
    """Every error: no totalItems, one message per problem, no results."""

    model_config = STRICT
    success: Literal[False]
    errors: list[StrictStr] = Field(min_length=1)
    results: list[Any] = Field(max_length=0)


InventoryPage = PagedResponse[StoreProduct]
CategoryPage = PagedResponse[Category]
# The response of each store operation but the summary (docs/contract.md §5), by operationId.
OPERATION_RESPONSES: dict[str, type[BaseModel]] = {
    "Stores_GetStoreProductSkus": PagedResponse[Sku],
    "Stores_GetInventoryProductQuantity": ResultsResponse[ProductQuantity],
    "Stores_GetInventorySkuPrices": PagedResponse[SkuListPrice],
    "Stores_GetStoreGroups": PagedResponse[StoreGroup],
    "Stores_GetStoreCategories": PagedResponse[StoreCategory],
}


class Token(BaseModel):
    """`POST /token`'s answer, as the live service's token endpoint gives it."""

    model_config = STRICT
    access_token: StrictStr = Field(description="Opaque; no read asks for it.")
    token_type: Literal["bearer"]
    expires_in: Literal[1209599] = Field(description="Seconds the token lives.")
    userName: StrictStr = Field(description="The client id.")
    issued: StrictStr = Field(alias=".issued", description="RFC 1123, GMT.")
    expires: StrictStr = Field(alias=".expires", description="RFC 1123, GMT; 14 days on.")


class TokenError(BaseModel):
    """A token request refused: another grant type or none, or no client id."""

    model_config = STRICT
    error: Literal["unsupported_grant_type", "invalid_client"]


class BulkFile(BaseModel):
    """A bulk file of the index: its URL path, what it holds, its size and SHA-256."""

    model_config = STRICT
    path: StrictStr
    categoryId: Int32
    groupId: Int64 | None = Field(description="null for a category's Parquet file.")
    bytes: StrictInt = Field(ge=0)
    sha256: StrictStr = Field(pattern="^[0-9a-f]{64}$")


class BulkIndex(BaseModel):
    """The bulk files' index: every file, and the build that last changed one, with its time."""

    model_config = STRICT
    build: StrictStr | None = Field(
        description="The id of the build that last changed a bulk file; null in a reproducible "
        "build (SOURCE_DATE_EPOCH set)."
    )
    builtAt: StrictStr
    files: list[BulkFile]
