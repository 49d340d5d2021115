"""The site's pages: the stores' inventory pages and lists (`inventory`, `store_lists`), and
the pages of no store, written once (`catalog`: the category listing; `help`: the help page and
the OpenAPI document)."""
