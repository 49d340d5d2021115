"""Tests of pipeline.tools."""
