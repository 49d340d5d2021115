-- GET /v1.39.0/catalog/products (Catalog_GetProducts), docs/contract.md §7. One row per
-- product of the page: the filters as the store summary's (ids, names case-insensitive exact,
-- productName a substring), ordered by lower-cased name then productId (name_rank);
-- extendedData with $get_extended_fields, skus with $include_skus. $first_position /
-- $last_position (1-based, inclusive, null for no bound) cut the page.
with
products as (select * from export.catalog_product),
matching as (
    select product_id, name_rank
    from products
    where ($category_id is null or category_id = $category_id)
      and ($group_id is null or group_id = $group_id)
      and ($category_name is null or category_name_key = lower($category_name))
      and ($group_name is null or group_name_key = lower($group_name))
      and ($product_name is null or name_matches(name_key, $product_name))
),
counted as (select count(*) as total_items from matching),
ranked as (
    -- The first $last_position products from $first_position on: a top-N, not a sort of every
    -- matching product.
    select *
    from matching
    order by name_rank
    limit $last_position - coalesce($first_position, 1) + 1
    offset coalesce($first_position, 1) - 1
),
asked as (
    -- (the table itself, not `products`: a CTE read twice may be materialised whole)
    select ranked.name_rank, product.product_id, product.head_json, product.extended_json
    from ranked
    join export.catalog_product as product using (product_id)
),
-- @include api/parts/catalog_product_json
final as (
    select
        null::bigint as path_id,
        (row_number() over (order by written.name_rank) + coalesce($first_position, 1) - 1)::bigint
            as position,
        counted.total_items::bigint as total_items,
        written.product_id::bigint as item_id,
        written.product_json as result_json
    from written
    cross join counted
)
select * from final order by position
