-- A catalog Product object of each product of `asked` (product_id, head_json and extended_json
-- of export.catalog_product, docs/contract.md §7): its fixed pieces, extendedData with $get_extended_fields, and its SKUs, by
-- skuId, with $include_skus (staging.skus, read for these products alone). Not a query
-- of its own: the CTEs below are included (`-- @include api/parts/catalog_product_json`) by the
-- operations that answer products, after their CTE `asked`; they end with a comma.
asked_skus as (
    select product_id, string_agg(json_catalog_sku(sku_id, product_id, language_id, printing_id, condition_id), ',' order by sku_id) as skus
    from staging.skus
    where $include_skus and product_id in (select product_id from asked)
    group by product_id
),
written as (
    select
        asked.*,
        concat(
            asked.head_json,
            case when $get_extended_fields then asked.extended_json end,
            case when $include_skus then concat(',"skus":[', coalesce(asked_skus.skus, ''), ']') end,
            '}'
        ) as product_json
    from asked
    left join asked_skus using (product_id)
),
