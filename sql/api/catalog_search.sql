-- POST /v1.39.0/catalog/categories/{categoryId}/search (Catalog_SearchCategory),
-- docs/contract.md §12. One row per product id of the page: the products of category
-- $category_id that match every filter of $search_filters (`search_matches`), in the order
-- $sort names: 'productname asc' (by name: the lower-cased name, then productId),
-- 'minprice asc' and 'minprice desc' (the product's lowest market price, the lowest lowPrice
-- of marts.product_market; products with none last, ties by name), or 'relevance'
-- (`name_relevance`, then by name). $offset and $limit cut the page; total_items counts
-- every match.
with
products as (select * from export.catalog_product),
keys as (
    -- Looked up for a Number or Rarity filter only (every product has its row): another folds
    -- to no row when the query is planned, and the left join below to null keys.
    select product_id, number_key, rarity_key
    from export.product
    where search_reads_keys($search_filters)
),
prices as (
    -- Read for a price order only: another folds to no row when the query is planned.
    select product_id, min(low_price) as lowest_price
    from marts.product_market
    where category_id = $category_id and $sort like 'minprice %'
    group by product_id
),
matching as (
    select products.product_id, products.name_key, products.name_rank
    from products
    -- A left join: the filter is then evaluated once a matching row, after the join (as a
    -- condition of an inner join, DuckDB evaluated its lambdas many times slower).
    left join keys using (product_id)
    where products.category_id = $category_id
      and search_matches(
          $search_filters,
          products.name_key, products.group_name_key, keys.number_key, keys.rarity_key
      )
),
ranked as (
    select
        matching.product_id,
        matching.name_rank,
        case when $sort like 'minprice %' then prices.lowest_price is null end as unpriced,
        case when $sort = 'minprice asc' then prices.lowest_price end as price_up,
        case when $sort = 'minprice desc' then prices.lowest_price end as price_down,
        case when $sort = 'relevance'
             then name_relevance(search_filters($search_filters), matching.name_key) end as rank_up,
        count(*) over () as total_items
    from matching
    left join prices using (product_id)
),
final as (
    select ranked.* replace (total_items::bigint as total_items, product_id::bigint as product_id)
    from ranked
)
select total_items, product_id
from final
order by unpriced asc, price_up asc, price_down desc, rank_up asc, name_rank asc
limit $limit
offset $offset
