"""A handler that never finishes, for tests/live/test_dashboard_stuck.py: the worker holds its
item, renewing the lease, until the test kills it."""

from __future__ import annotations

import time

from relq.worker.handlers import Handlers

JOB_TYPE = "RelqStuckJob"


def install(handlers: Handlers) -> None:
    @handlers.register("SyncQueue", JOB_TYPE)
    def hang(item) -> str:
        while True:
            time.sleep(1)
