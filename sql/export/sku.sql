-- One row per catalog SKU: the fixed middle of its Sku JSON object (spec 2.3), from
-- `"condition"` to `"foil"`, built once and shared by every listing of the SKU.
-- @column sku_id: SKU identifier
-- @column body_json: '"condition":{..},"language":{..},"foil":..'
with
skus as (select * from marts.sku),
final as (
    select
        sku_id,
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
select * from final order by sku_id
