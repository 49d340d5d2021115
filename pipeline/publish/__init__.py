"""Publish stage: a finished release goes live in one rename (`release`), one build at a time
per output directory."""
