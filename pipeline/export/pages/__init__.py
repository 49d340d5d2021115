"""The site's pages: the stores' inventory pages and lists (`inventory`, `store_lists`) and the
pages not of a store (`catalog`)."""
