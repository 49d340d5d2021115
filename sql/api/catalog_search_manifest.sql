-- GET /v1.39.0/catalog/categories/{categoryId}/search/manifest
-- (Catalog_GetCategorySearchManifest), docs/contract.md §12. One row per category with a row
-- (category $item_id; null: every category, for the exporter): its manifest, built by the
-- build (export.search_manifest).
with
manifests as (select * from export.search_manifest),
final as (
    select
        category_id::bigint as path_id,
        1::bigint as position,
        1::bigint as total_items,
        category_id::bigint as item_id,
        manifest_json as result_json
    from manifests
    where $item_id is null or category_id = $item_id
)
select * from final order by path_id
