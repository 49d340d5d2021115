-- Listings whose key occurs more than once: every row of that key is rejected, since nothing
-- says which one is right. Key: (store, channel, skuId) for a generic listing,
-- (store, channel, storePriceCustomId) for a custom one.
with
keyed as (
    select
        source_file, source_row, is_custom,
        store_key, channel_id,
        case when is_custom then store_price_custom_id else sku_id end as listing_id
    from staging.listings
),
final as (
    select
        'listings' as table_name, source_file, source_row,
        case when is_custom then 'storePriceCustomId' else 'skuId' end as column_name,
        concat_ws(',', store_key, channel_id, listing_id) as value,
        'duplicate listing key' as reason
    from keyed
    qualify count(*) over (partition by store_key, channel_id, is_custom, listing_id) > 1
)
select * from final
