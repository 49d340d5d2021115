-- One row per product that passed the contract checks (grain: productId).
with
-- valid_products (made by the runner): the rows of raw.products without a row-level reject,
-- every declared column parsed to its contract type, defaults applied (`rules.parsed`)
valid as (select * from valid_products),
final as (
    select
        "productId" as product_id,
        "categoryId" as category_id,
        "groupId" as group_id,
        "name" as name,
        "rarity" as rarity,
        "number" as number,
        null::varchar as clean_name,
        null::varchar as image_url,
        null::varchar as url,
        null::timestamp as modified_on,
        null::integer as image_count,
        null::struct(is_presale boolean, released_on timestamp, note varchar) as presale_info,
        null::struct(name varchar, display_name varchar, value varchar)[] as extended_data,
        _source_file as source_file,
        _source_row as source_row
    from valid
)
select * from final
