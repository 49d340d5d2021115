"""Tests of the benchmark (the top-level `bench/` package)."""
