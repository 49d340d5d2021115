"""The API being reproduced (docs/contract.md), shared by the exporter and the live server:
request parameters and their errors (`params`), response bytes and messages (`responses`), the
mapping from a request to a published file (`urls`), the response models (`models`) and the
OpenAPI document and help page generated from them (`docs`).

The store inventory summary itself is one parameterised SQL file
(`sql/api/store_inventory_products.sql`): the exporter runs it once for every store and channel,
`pipeline.serve` for one request; both make the page bytes with `responses.envelope` (the
exporter with its polars form, `envelope_expr`).
"""
