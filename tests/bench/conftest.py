"""The benchmark's tests. Those marked ``bench`` run a scenario against a live server
(they are ``mssql`` tests too) and take minutes, so they stay out of the default live
run (`invoke test`): they run only with RELQ_BENCH=1, as `invoke bench --test` sets."""

from __future__ import annotations

import os

import pytest

BENCH = "RELQ_BENCH"


def pytest_configure(config: pytest.Config) -> None:
    # Registered here too, so that --strict-markers accepts it wherever pyproject.toml does not.
    config.addinivalue_line("markers", "bench: a live benchmark scenario; runs only with RELQ_BENCH=1")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get(BENCH, "").strip() == "1":
        return
    skip = pytest.mark.skip(reason="benchmark scenario: set RELQ_BENCH=1 (invoke bench --test) to run it")
    for item in items:
        if item.get_closest_marker("bench") is not None:
            item.add_marker(skip)
