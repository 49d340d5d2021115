-- GET /v1.39.0/catalog/skus/{skuIds} (Catalog_GetSkus), docs/contract.md §7. One row per SKU of
-- $ids found, in the order first given.
with
-- @include api/asked_ids
skus as (select * from staging.skus),
final as (
    select
        null::bigint as path_id,
        asked.position::bigint as position,
        null::bigint as total_items,
        asked.id::bigint as item_id,
        concat(
            '{"skuId":', skus.sku_id,
            ',"productId":', skus.product_id,
            ',"languageId":', skus.language_id,
            ',"printingId":', skus.printing_id,
            ',"conditionId":', skus.condition_id, '}'
        ) as result_json
    from asked
    join skus on skus.sku_id = asked.id
)
select * from final order by position
