"""The API being reproduced (docs/contract.md), shared by the exporter and the live server:
`params`, `responses`, `urls`, `models`, and `docs` (the OpenAPI document and help page)."""
