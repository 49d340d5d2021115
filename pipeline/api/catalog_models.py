"""Response models of the catalog and price operations (docs/contract.md §7), beside
`pipeline.api.models`: the OpenAPI document is generated from them, and every published page
of these operations parses into them."""

from __future__ import annotations

from typing import Generic

from pydantic import BaseModel, Field, StrictBool, StrictStr

from pipeline.api.models import (
    STRICT,
    TIME_DOC,
    Category,
    Int32,
    Int64,
    Money,
    PagedResponse,
    ResultsResponse,
    StoreGroup,
    T,
    Time,
    absent,
)

_NO_INPUT = "Always null: it needs sales or a Direct programme, which no input has."
_UNLISTED = "Null when nothing is listed on the marketplace."


class PartialResponse(BaseModel, Generic[T]):
    """207: some ids of the list were found (their results), others not (an error each)."""

    model_config = STRICT
    success: bool = Field(description="true: the ids found are answered.")
    errors: list[StrictStr] = Field(min_length=1, description="One per id not found.")
    results: list[T] = Field(min_length=1)


class CatalogCondition(BaseModel):
    model_config = STRICT
    conditionId: Int64
    name: StrictStr
    abbreviation: StrictStr | None
    displayOrder: Int32 | None


class CategoryLanguage(BaseModel):
    model_config = STRICT
    languageId: Int32
    name: StrictStr
    abbr: StrictStr | None


class CategoryPrinting(BaseModel):
    model_config = STRICT
    printingId: Int32
    name: StrictStr
    displayOrder: Int32 | None
    modifiedOn: Time | None = Field(description=TIME_DOC)


class PresaleInfo(BaseModel):
    model_config = STRICT
    isPresale: StrictBool | None
    releasedOn: Time | None = Field(description=TIME_DOC)
    note: StrictStr | None


class ExtendedData(BaseModel):
    model_config = STRICT
    name: StrictStr | None  # an input entry's missing or null key is published null
    displayName: StrictStr | None
    value: StrictStr | None


class CatalogSku(BaseModel):
    model_config = STRICT
    skuId: Int64
    productId: Int64
    languageId: Int32
    printingId: Int32
    conditionId: Int64


class CatalogProduct(BaseModel):
    """A product of the catalog: extendedData only with getExtendedFields=true, skus only with
    includeSkus=true."""

    model_config = STRICT
    productId: Int64
    name: StrictStr
    cleanName: StrictStr | None
    imageUrl: StrictStr | None
    categoryId: Int32
    groupId: Int64
    url: StrictStr | None
    modifiedOn: Time | None = Field(description=TIME_DOC)
    imageCount: Int32 | None
    presaleInfo: PresaleInfo | None
    extendedData: list[ExtendedData] | None = absent("With getExtendedFields=true only.")
    skus: list[CatalogSku] | None = absent("With includeSkus=true only, by skuId.")


class ProductPrice(BaseModel):
    """A product x printing's prices over every store's market listings."""

    model_config = STRICT
    productId: Int64
    lowPrice: Money | None = Field(description=f"The lowest listing price. {_UNLISTED}")
    midPrice: Money | None = Field(
        description="The median listing price, the lower middle one for an even count. " + _UNLISTED
    )
    highPrice: Money | None = Field(description=f"The highest listing price. {_UNLISTED}")
    marketPrice: None = Field(description=_NO_INPUT)
    directLowPrice: None = Field(description=_NO_INPUT)
    subTypeName: StrictStr | None = Field(description="The printing's name.")


class SkuPrice(BaseModel):
    model_config = STRICT
    skuId: Int64
    lowPrice: Money | None = Field(description=f"The lowest listing price. {_UNLISTED}")
    lowestShipping: None = Field(description="Always null: no input has shipping.")
    lowestListingPrice: Money | None = Field(description=f"As lowPrice. {_UNLISTED}")
    marketPrice: None = Field(description=_NO_INPUT)
    directLowPrice: None = Field(description=_NO_INPUT)


class SearchOption(BaseModel):
    """A sort, or a value a filter offers: `value` is what a search body names."""

    model_config = STRICT
    text: StrictStr
    value: StrictStr


class SearchFilter(BaseModel):
    model_config = STRICT
    name: StrictStr = Field(description="ProductName, SetName, Number or Rarity.")
    displayName: StrictStr
    inputType: StrictStr = Field(description="Text, SingleValue or MultipleValues.")
    items: list[SearchOption] = Field(description="The values offered; [] for a text filter.")


class SearchManifest(BaseModel):
    """What a category's products can be searched and sorted by (docs/contract.md §12)."""

    model_config = STRICT
    sorting: list[SearchOption]
    filters: list[SearchFilter]


class SearchFilterValues(BaseModel):
    """A filter of a search's body; other keys are ignored."""

    name: StrictStr | None = absent("A filter of the manifest (case-insensitive).")
    values: list[StrictStr] | None = absent("Any of them matches; none given: anything does.")


class SearchRequest(BaseModel):
    """A search's body: strict UTF-8 JSON, every key optional, null as absent, other keys
    ignored, integers without fraction or exponent."""

    sort: StrictStr | None = absent(
        "ProductName ASC, MinPrice DESC, MinPrice ASC or Relevance (the default), case-insensitive."
    )
    limit: Int32 | None = absent("1 to 100; 10 by default.")
    offset: Int32 | None = absent("0 or more; 0 by default.")
    filters: list[SearchFilterValues] | None = absent("Every filter must match.")
    includeAggregates: StrictBool | None = absent("Accepted and ignored.")


class ProductIdPage(PagedResponse[Int64]):
    """The catalog's search: a page of product ids."""


# Each operation's result item, by operationId: its 200 is a page or a results envelope of it
# (`CatalogOperation.form`), and an `ids` operation's 207 a PartialResponse.
CATALOG_ITEMS: dict[str, type[BaseModel]] = {
    "Catalog_GetCategoryGroups": StoreGroup,
    "Catalog_GetCategoryConditions": CatalogCondition,
    "Catalog_GetCategoryLanguages": CategoryLanguage,
    "Catalog_GetCategoryPrintings": CategoryPrinting,
    "Catalog_GetCategorySearchManifest": SearchManifest,
    "Catalog_GetCategories_ByIds": Category,
    "Catalog_GetGroups": StoreGroup,
    "Catalog_GetGroups_ByIds": StoreGroup,
    "Catalog_GetProducts": CatalogProduct,
    "Catalog_GetProduct": CatalogProduct,
    "Catalog_GetSkusByProductId": CatalogSku,
    "Catalog_GetSkus": CatalogSku,
    "Catalog_GetConditions": CatalogCondition,
    "Pricing_GetGroupPrices": ProductPrice,
    "Pricing_GetProductPrices": ProductPrice,
    "Pricing_GetProductConditionPrices": SkuPrice,
}


def responses(operation_id: str, form: str) -> tuple[type[BaseModel], type[BaseModel] | None]:
    """The models of an operation's 200 and, for a list of ids, its 207."""
    item = CATALOG_ITEMS[operation_id]
    if form == "page":
        return PagedResponse[item], None  # type: ignore[valid-type]
    ok = ResultsResponse[item]  # type: ignore[valid-type]
    return ok, PartialResponse[item] if form == "ids" else None  # type: ignore[valid-type]
