-- One row per catalog SKU: the fixed middle of its Sku JSON object (spec 2.3), from
-- `"condition"` to `"foil"`: its (condition, language, printing)'s body (`export.sku_body`).
-- @column sku_id: SKU identifier
-- @column body_json: '"condition":{..},"language":{..},"foil":..'
with
skus as (select * from marts.sku),
bodies as (select * from export.sku_body),
final as (
    select
        skus.sku_id,
        bodies.body_json
    from skus
    join bodies using (condition_id, language_id, printing_id)
)
select * from final order by sku_id
