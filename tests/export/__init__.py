"""Tests of pipeline.export."""
