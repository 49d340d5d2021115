-- A product's extendedData entries (docs/contract.md §7), as structs (name, display_name,
-- value): the input's list as given; from a products input without it (or a null list), the
-- entries Number and Rarity derived, each only where not null, in that order. Not a query of
-- its own: the CTE below is included (`-- @include api/parts/extended_entries`) by
-- export/catalog_product (the products' JSON) and api/bulk_rows (the bulk files' ext columns);
-- it reads staging.products and ends with a comma.
extended_entries as (
    select
        product_id,
        coalesce(extended_data, list_filter([
            case when number is not null then
                {'name': 'Number', 'display_name': 'Card Number', 'value': number} end,
            case when rarity is not null then
                {'name': 'Rarity', 'display_name': 'Rarity', 'value': rarity} end
        ], lambda e: e is not null)) as entries
    from staging.products
),
