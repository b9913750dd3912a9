"""relq's worker runtime: run Python handlers on a relational queue's items
through its procedures (claim, keep the lease, report), with a clean shutdown.

    handlers = Handlers()

    @handlers.register("SyncQueue", "CustomerSync")
    def sync_customer(item: Item) -> str:
        ...
        return "synced"
"""

from relq.worker.handlers import Cancel, Handlers, Item, NextStep, Permanent, Snooze
from relq.worker.runtime import Settings, Worker

__all__ = ["Cancel", "Handlers", "Item", "NextStep", "Permanent", "Settings", "Snooze", "Worker"]
