"""Tests of pipeline.publish."""
