-- GET /v1.39.0/catalog/products (Catalog_GetProducts), docs/contract.md §7. One row per
-- product of the page: the filters as the store summary's (ids, names case-insensitive exact,
-- productName a substring), ordered by lower-cased name then productId (name_rank);
-- extendedData with $get_extended_fields, skus with $include_skus. $first_position /
-- $last_position (1-based, inclusive, null for no bound) cut the page.
with
products as (select * from export.catalog_product),
matching as (
    select
        product_id,
        name_rank,
        count(*) over () as total_items
    from products
    where ($category_id is null or category_id = $category_id)
      and ($group_id is null or group_id = $group_id)
      and ($category_name is null or category_name_key = lower($category_name))
      and ($group_name is null or group_name_key = lower($group_name))
      and ($product_name is null or contains(name_key, lower($product_name)))
),
asked as (
    -- The first $last_position products from $first_position on: a top-N, not a sort of every
    -- matching product.
    select *
    from matching
    order by name_rank
    limit $last_position - coalesce($first_position, 1) + 1
    offset coalesce($first_position, 1) - 1
),
-- @include api/catalog_product_json
final as (
    select
        null::bigint as path_id,
        (row_number() over (order by name_rank) + coalesce($first_position, 1) - 1)::bigint
            as position,
        total_items::bigint as total_items,
        product_id::bigint as item_id,
        product_json as result_json
    from written
)
select * from final order by position
