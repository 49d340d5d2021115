-- One row per (condition, language, printing) of the catalog's SKUs: the fixed middle of a Sku
-- JSON object (spec 2.3), from `"condition"` to `"foil"`. A SKU's body depends on these three
-- alone, so a few hundred rows serve every SKU: a store's answer joins its listings (which
-- carry the three ids, `marts.listing`) to this small table instead of the catalog's SKUs.
-- @column condition_id: Condition identifier
-- @column language_id: Language identifier
-- @column printing_id: Printing identifier
-- @column body_json: '"condition":{..},"language":{..},"foil":..'
with
skus as (select * from marts.sku),
final as (
    select distinct
        condition_id,
        language_id,
        printing_id,
        concat(
            '"condition":{"conditionId":', condition_id,
            ',"name":', json_text(condition_name),
            '},"language":{"languageId":', language_id,
            ',"name":', json_text(language_name),
            ',"abbr":', json_text(language_abbr),
            '},"foil":', json_bool(foil)
        ) as body_json
    from skus
)
select * from final order by condition_id, language_id, printing_id
