"""What each part of the dashboard needs of the login, and which relq role grants it
(database/security): the dashboard asks the database first (HAS_PERMS_BY_NAME) and says
which role is missing, instead of failing a query with error 229."""

from __future__ import annotations

from dataclasses import dataclass

from relq.dashboard.store import ACTIONS, Store, procedure, view


@dataclass(frozen=True)
class Need:
    role: str
    what: str  # what the page does with it, for the message
    grants: tuple[tuple[str, str], ...]  # (object, permission)


def look() -> Need:
    return Need("QueueMonitor", "the queues' health",
                (("dbo.QueueHealth_V", "SELECT"), ("dbo.QueueThroughput_V", "SELECT"),
                 ("dbo.QueueControl_V", "SELECT")))


def scrape() -> Need:
    """/metrics: the health, and what its counters count (relq/dashboard/metrics.py)."""
    return Need("QueueMonitor", "the queues' metrics",
                (*look().grants, ("dbo.QueueAttemptOutcome_V", "SELECT"), ("dbo.QueueItemKey_V", "SELECT")))


def browse(queue: str) -> Need:
    return Need("QueueAdmin", f"{queue}'s items", ((view(queue), "SELECT"), ("dbo.QueueAttempt_V", "SELECT")))


def act(queue: str) -> Need:
    return Need("QueueAdmin", f"controlling {queue}'s items",
                tuple((procedure(action, queue), "EXECUTE") for action in ACTIONS))


def pause() -> Need:
    """Pausing and resuming a queue or a job type (the overview's controls)."""
    return Need("QueueAdmin", "pausing and resuming queues",
                (("dbo.Pause_Queue_trx", "EXECUTE"), ("dbo.Resume_Queue_trx", "EXECUTE")))


def missing(store: Store, need: Need) -> str | None:
    """None when the login holds every grant of ``need``; else one line naming the role."""
    held = store.permissions(list(need.grants))
    lacking = [obj for (obj, _), ok in zip(need.grants, held, strict=True) if not ok]
    if not lacking:
        return None
    return (f"{need.what} needs the role {need.role}: this login lacks "
            f"{', '.join(lacking)} (or relq is not deployed in this database)")
