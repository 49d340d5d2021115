"""Store inventory pipeline: raw catalog and inventory exports -> DuckDB -> static API pages."""
