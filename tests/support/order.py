"""The order the suite runs in: the slow tests first. pytest-xdist's work stealing splits the
list between the workers and lets an idle one take the tail of another's share, so a long test
started last would leave one core idle while it runs; started first, the short tests fill in
around it."""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests marked `slow` first, each group in its collected order."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
