"""Tests of pipeline.transform."""
