-- The summary's page over a store's products (docs/contract.md §4): the excluded categories,
-- the filters on a category, a group and the names, the order and the cut of the page. Not a
-- query of its own: the CTEs below are included (`-- @include api/parts/store_inventory_page`) by the
-- answer from the warehouse (`store_inventory_products`) and by the answer from a store's
-- products kept by `pipeline serve` (`store_inventory_kept`), so both cut the same page. They
-- read `named`: one row per store, channel and product with its listings' counts
-- (is_excluded_category, sku_count, lowest_price) and its catalog keys (category_id,
-- group_id, name_key, category_name_key, group_name_key, number_key, rarity_key); and they
-- end with a comma. A store's search (docs/contract.md §12) is the same page with the body's
-- filters ($search_filters, `search_matches`) and its `Relevance` order.
ranked as (
    -- The answer's products and order within a store and channel, as sort columns (null but
    -- for the requested sort), then productId, and how many there are (total_items: a
    -- request's, for one store and channel; the exporter, which answers many, reads none). A
    -- filter keeps or drops a product whole, with all its entries. The exporter cuts the
    -- categoryId and groupId pages from the unfiltered answer: a filter on a category or group
    -- keeps the other products' order.
    select
        named.*,
        case when $sort_field = 'price' and not $sort_desc then lowest_price end as price_up,
        case when $sort_field = 'price' and $sort_desc then lowest_price end as price_down,
        case when $sort_field = 'relevance'
             then name_relevance(search_filters($search_filters), name_key) end as rank_up,
        case when $sort_field in ('name', 'relevance') and not $sort_desc
             then name_key end as name_up,
        case when $sort_field = 'name' and $sort_desc then name_key end as name_down,
        count(*) over () as total_items
    from named
    where ($include_excluded_categories or not is_excluded_category)
      and ($category_id is null or category_id = $category_id)
      and ($group_id is null or group_id = $group_id)
      and ($category_name is null or category_name_key = lower($category_name))
      and ($group_name is null or group_name_key = lower($group_name))
      and ($product_name is null or name_matches(name_key, $product_name))
      and search_matches($search_filters, name_key, group_name_key, number_key, rarity_key)
),
page as (
    -- The page of a request (one store and channel): the first $last_position products from
    -- $first_position on, in the answer's order (a top-N, not a sort of every product). The
    -- exporter reads the whole answer (no bound) and no total_items, so it runs no count; its
    -- query orders the rows of many stores and channels. A query that includes this part
    -- orders its rows by the same keys: price_up asc, price_down desc, rank_up asc, name_up
    -- asc, name_down desc, product_id.
    select *
    from ranked
    order by price_up asc, price_down desc, rank_up asc, name_up asc, name_down desc, product_id
    limit $last_position - coalesce($first_position, 1) + 1
    offset coalesce($first_position, 1) - 1
),
