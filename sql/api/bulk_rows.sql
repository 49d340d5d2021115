-- The bulk files' rows (docs/serving.md, "Bulk files"): one per catalog product x printing of
-- its SKUs with its market prices (marts.product_market, as pricing/group answers them), and
-- one for a product with no SKUs, its printing and prices null. `ext` holds the product's
-- extendedData entries as (column, value): the column is `ext` and the entry's name with every
-- character but an ASCII letter or digit dropped (an entry whose name keeps none has no
-- column); `export.pages.bulk` keeps a product's first entry of a column. No store key.
with
products as (select * from staging.products),
market as (select * from marts.product_market),
-- @include api/parts/extended_entries
ext as (
    select
        product_id,
        list_filter(
            list_transform(
                entries,
                lambda e: {
                    'column': 'ext' || regexp_replace(coalesce(e.name, ''), '[^A-Za-z0-9]', '', 'g'),
                    'value': e.value
                }
            ),
            lambda e: e.column <> 'ext'
        ) as ext
    from extended_entries
),
final as (
    select
        products.product_id as "productId",
        products.name as "name",
        products.clean_name as "cleanName",
        products.image_url as "imageUrl",
        products.category_id as "categoryId",
        products.group_id as "groupId",
        products.url as "url",
        products.modified_on as "modifiedOn",
        iso_time(products.modified_on) as "modifiedOnText",
        products.image_count as "imageCount",
        market.low_price as "lowPrice",
        market.mid_price as "midPrice",
        market.high_price as "highPrice",
        null::decimal(18, 2) as "marketPrice",
        null::decimal(18, 2) as "directLowPrice",
        market.printing_name as "subTypeName",
        market.printing_id as "printingId",
        ext.ext
    from products
    left join market on market.product_id = products.product_id
    join ext on ext.product_id = products.product_id
)
select * from final order by "categoryId", "groupId", "productId", "printingId"
