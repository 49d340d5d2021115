"""Tests of pipeline.serve."""
