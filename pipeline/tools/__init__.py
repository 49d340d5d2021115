"""Tools beside the pipeline: synthetic inputs of any size (`generate`, `pipeline generate`).
The benchmark is the top-level `bench/` package, not shipped."""
