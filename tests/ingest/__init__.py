"""Tests of pipeline.ingest."""
