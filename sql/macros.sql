-- Temporary macros: parsing and JSON rules that every SQL file shares. `pipeline.db` creates
-- them on each connection (and `pipeline serve` on each cursor); they are never stored in
-- the warehouse file.

CREATE OR REPLACE TEMP MACRO as_bool(t) AS
    CASE lower(trim(nullif(t, ''))) WHEN 'true' THEN true WHEN '1' THEN true
         WHEN 'false' THEN false WHEN '0' THEN false END;

-- A JSON string literal (UTF-8 as is, control characters escaped) or null.
CREATE OR REPLACE TEMP MACRO json_text(t) AS coalesce(to_json(t::VARCHAR)::VARCHAR, 'null');

CREATE OR REPLACE TEMP MACRO json_bool(b) AS
    CASE WHEN b THEN 'true' WHEN NOT b THEN 'false' ELSE 'null' END;

-- A listing of the stores asked for (all of them when `store_keys` is null). The hashes
-- prune: marts.listing is clustered by store_hash, and DuckDB's zone maps skip every row
-- group that holds none of the stores (a text key's bounds are too short to).
CREATE OR REPLACE TEMP MACRO of_stores(store_keys, store_key, store_hash) AS
    store_keys IS NULL
    OR (list_contains(list_transform(store_keys, lambda key: hash(key)), store_hash)
        AND list_contains(store_keys, store_key));

-- A listing the request's flags show (docs/contract.md §4.1): generic ones if
-- include_generic, custom ones if include_custom, those of an excluded category only if
-- include_excluded.
CREATE OR REPLACE TEMP MACRO shown(is_custom, is_excluded, generic, custom, excluded) AS
    (CASE WHEN is_custom THEN custom ELSE generic END) AND (excluded OR NOT is_excluded);

-- A time as the live service writes it (.NET round-trip, no zone; docs/contract.md §3.4):
-- seconds always, then the fraction with its trailing zeros trimmed, and no dot when it is
-- zero: 2025-11-19T15:58:35.27, 2022-11-11T00:00:00. TIME_PATTERN is the same rule, checked.
-- iso_time is the text, json_time the JSON string (the bulk files' CSV write the text).
CREATE OR REPLACE TEMP MACRO iso_time(t) AS
    rtrim(rtrim(strftime(t, '%Y-%m-%dT%H:%M:%S.%f'), '0'), '.');
CREATE OR REPLACE TEMP MACRO json_time(t) AS json_text(iso_time(t));

-- The SKU order of a product's entries (docs/contract.md §4.2): price descending, then
-- skuId, then generic before custom, then storePriceCustomId. A sort key: ORDER BY it, or
-- list_sort a list of structs that lead with it.
CREATE OR REPLACE TEMP MACRO sku_order(price, sku_id, is_custom, custom_id) AS
    {'price': -price, 'sku': sku_id, 'custom': is_custom, 'custom_id': custom_id};

-- An entry of a listing, as every store operation writes it (the summary's skus, a
-- product's skus, its quantities, the price list): `head` (the keys before skuId, with
-- their trailing comma), skuId, a custom listing's storePriceCustomId, `middle` (the
-- operation's own keys, with their leading comma), isCustom, then a custom listing's other
-- keys: null where the input has none, but additionalImageUrls, which is [] then. A generic
-- entry carries no custom key (docs/contract.md §3.3).
CREATE OR REPLACE TEMP MACRO json_listing_entry(
        head, sku_id, is_custom, custom_id, middle, title, description, main, more) AS
    concat('{', head, '"skuId":', sku_id,
           CASE WHEN is_custom THEN concat(',"storePriceCustomId":', custom_id) END,
           middle, ',"isCustom":', json_bool(is_custom),
           CASE WHEN is_custom THEN concat(
               ',"title":', json_text(title), ',"description":', json_text(description),
               ',"mainImageUrl":', json_text(main),
               ',"additionalImageUrls":', coalesce(to_json(more)::VARCHAR, '[]')) END,
           '}');

-- A Sku entry of a store's inventory (spec 2.3): the summary's `skus` and the product's skus
-- operation write it alike. `body` is the SKU's fixed fragment (export.sku).
CREATE OR REPLACE TEMP MACRO json_sku_entry(
        sku_id, is_custom, custom_id, body, price, quantity, is_featured,
        title, description, main, more) AS
    json_listing_entry('', sku_id, is_custom, custom_id,
                       concat(',', body, ',"price":', json_money(price),
                              ',"quantity":', quantity,
                              ',"isFeatured":', json_bool(is_featured)),
                       title, description, main, more);

-- A SKU of the catalog (docs/contract.md §7), as every catalog answer writes it.
CREATE OR REPLACE TEMP MACRO json_catalog_sku(
        sku_id, product_id, language_id, printing_id, condition_id) AS
    concat('{"skuId":', sku_id, ',"productId":', product_id, ',"languageId":', language_id,
           ',"printingId":', printing_id, ',"conditionId":', condition_id, '}');

-- Money as a JSON number in shortest form with a decimal point: 12.30 -> 12.3, 5.00 -> 5.0.
-- Two decimals always, so a trailing zero is never the only fraction digit.
CREATE OR REPLACE TEMP MACRO json_money(d) AS
    CASE WHEN ends_with(CAST(d AS DECIMAL(18, 2))::VARCHAR, '0')
         THEN (CAST(d AS DECIMAL(18, 2))::VARCHAR)[:-2]
         ELSE CAST(d AS DECIMAL(18, 2))::VARCHAR END;

-- Name matching and the search's orders (docs/contract.md §4.1, §12): the one definition the
-- summary's productName filter, the catalog's products, the catalog's search and a store's
-- search share. `name_key` is the lower-cased product name (export.product); a value is
-- lower-cased here, as the name was (Unicode lower-casing, no accent folding).
CREATE OR REPLACE TEMP MACRO name_matches(name_key, value) AS contains(name_key, lower(value));

-- A search body's filters (a JSON list of {name, values}, each name lower-cased, checked by
-- `pipeline.api.search`) as a list of structs.
CREATE OR REPLACE TEMP MACRO search_filters(filters_json) AS
    from_json(filters_json, '[{"name":"VARCHAR","values":["VARCHAR"]}]');

-- Whether a product matches every filter of a search (`filters_json`, the JSON text of
-- `search_filters`): one of a filter's values matches (none given: anything does).
-- ProductName: the name contains it; SetName: the group's name equals it, `All` any group;
-- Number and Rarity: equal to it (null matches nothing). No filter (`[]`, every request but a
-- search's, and the exporter's) folds to true when the query is planned: no row pays for it.
CREATE OR REPLACE TEMP MACRO search_matches(
        filters_json, name_key, group_name_key, number_key, rarity_key) AS
    filters_json = '[]'
    OR len(list_filter(search_filters(filters_json), lambda f: NOT (
        len(f.values) = 0
        OR len(list_filter(f.values, lambda v: coalesce(CASE f.name
            WHEN 'productname' THEN name_matches(name_key, v)
            WHEN 'setname' THEN lower(v) = 'all' OR group_name_key = lower(v)
            WHEN 'number' THEN number_key = lower(v)
            WHEN 'rarity' THEN rarity_key = lower(v) END, false))) > 0))) = 0;

-- Whether a search (`filters_json`, as `search_matches` reads it) has a Number or a Rarity
-- filter with a value: without one, `search_matches` reads neither key, and a query need not
-- look them up (a constant: it folds when the query is planned).
CREATE OR REPLACE TEMP MACRO search_reads_keys(filters_json) AS
    filters_json != '[]'
    AND len(list_filter(search_filters(filters_json), lambda f:
        f.name IN ('number', 'rarity') AND len(f.values) > 0)) > 0;

-- Every value of a search's ProductName filters (`search_filters`), lower-cased.
CREATE OR REPLACE TEMP MACRO product_names(filters) AS
    list_transform(
        flatten(list_transform(list_filter(filters, lambda f: f.name = 'productname'),
                               lambda f: f.values)),
        lambda v: lower(v));

-- The `Relevance` order's first key: 0 for a name equal to a value of a ProductName filter,
-- 1 for one that starts with one, 2 for the rest (every name, without such a filter); a
-- name order breaks the ties. The values are gathered into one list of lower-cased values
-- first: a constant, folded when the query is planned, so a row runs one lambda, not two.
CREATE OR REPLACE TEMP MACRO name_relevance(filters, name_key) AS
    CASE
        WHEN list_contains(product_names(filters), name_key) THEN 0
        WHEN len(list_filter(product_names(filters), lambda v: starts_with(name_key, v))) > 0
            THEN 1
        ELSE 2
    END;
