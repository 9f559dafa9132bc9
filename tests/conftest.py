"""Test-run ordering: the longest tests start first.

The default run is spread over the CPU cores by pytest-xdist (``-n auto`` in setup.cfg); a
worker takes the next test in collection order, so a long test collected last (the registry
check, ~3.5 minutes, is in tests/verify) ends the run alone on one core.  Tests marked
``long_pole`` are moved to the front, each to its own worker, and the rest fill in beside them.
"""
from __future__ import annotations


def pytest_collection_modifyitems(session, config, items) -> None:
    items.sort(key=lambda item: item.get_closest_marker("long_pole") is None)  # stable
