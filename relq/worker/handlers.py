"""What a worker runs: plain Python callables registered per queue, job type and
step, and the few types they use to say how an item ended.

A handler takes an :class:`Item` and returns the response to record (a string, or
None): the item is Completed. To advance a multi-step job it returns
:class:`NextStep`: the step is recorded (which renews the lease) and the handler
of that step runs next; after a retry the item resumes at its recorded step. It
returns :class:`Snooze` to come back later without spending an attempt, and
:class:`Cancel` when the item is no longer wanted. An exception is an Error,
retried with the database's backoff, unless it is :class:`Permanent`, which fails
the item at once.

While it runs, :attr:`Item.lost` says whether the item is still this attempt's: the
worker's lease renewals find out when an operator cancelled it, another worker took
it over after the lease ran out, or it is gone; a long handler can stop early then,
since its report will be refused.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


@dataclass(frozen=True)
class Item:
    """A claimed work item, as the queue's worker view shows it."""

    queue: str  # Notification, SyncQueue, ...
    key: datetime  # EnqueuedAt
    type: str
    step: str | None  # the step reached; None before the first step advance
    attempt: int  # AttemptNum: 1 on the first claim
    # every column of the worker view; out of repr, since they may hold secrets (an OTP)
    fields: Mapping[str, Any] = field(default_factory=dict, repr=False)
    # what the worker knows of the item while its handler runs: why it is no longer this attempt's
    watch: Callable[[], str | None] = field(default=lambda: None, repr=False, compare=False)

    def __getitem__(self, column: str) -> Any:
        return self.fields[column]

    @property
    def lost(self) -> str | None:
        """Why the item is no longer this attempt's (cancelled by an operator, taken over by
        another worker after the lease ran out, purged), as the worker's last lease renewal
        found; None while it is still held. Renewals come every third of the lease (at most
        every 60 s), so this is at most that late; whatever the handler then returns is
        refused and dropped."""
        return self.watch()


@dataclass(frozen=True)
class NextStep:
    """Returned by a handler: record ``step`` and run the handler registered for it."""

    step: str
    response: str | None = None


# The longest snooze: a longer one is more likely a unit mistake (milliseconds given as seconds)
# than a plan; a job due so much later is enqueued with its ScheduledFor instead.
MAX_SNOOZE_S = 31 * 86400


@dataclass(frozen=True)
class Snooze:
    """Returned by a handler: the item comes back in ``seconds`` (by the server's clock), its
    attempt given back (AttemptNum is not spent), its step kept. ``response`` is recorded on
    the attempt; by default "snoozed for <seconds> s". A handler that snoozes for ever keeps
    its item for ever: count in the item's own fields if that matters."""

    seconds: float
    response: str | None = None


@dataclass(frozen=True)
class Cancel:
    """Returned by a handler: the item is no longer wanted and ends Cancelled (a final state, as
    an operator's Cancel_ leaves it); ``reason`` is recorded as the attempt's response."""

    reason: str | None = None


class Permanent(Exception):
    """Raised by a handler for a failure no retry can fix: the item is Failed at once."""


Handler = Callable[[Item], "str | NextStep | Snooze | Cancel | None"]


class Handlers:
    """The registry: (queue, job type, step) -> handler. Step None is the first step."""

    def __init__(self) -> None:
        self._handlers: dict[tuple[str, str, str | None], Handler] = {}

    def register(self, queue: str, type: str, step: str | None = None) -> Callable[[Handler], Handler]:
        """A decorator: ``@handlers.register("Notification", "ResetPassword")``."""

        def add(handler: Handler) -> Handler:
            if (queue, type, step) in self._handlers:
                raise ValueError(f"a handler for {queue} {type} step {step or '(first)'} "
                                 f"is already registered")
            self._handlers[(queue, type, step)] = handler
            return handler

        return add

    def find(self, queue: str, type: str, step: str | None) -> Handler | None:
        return self._handlers.get((queue, type, step))

    def queues(self) -> set[str]:
        return {queue for queue, _, _ in self._handlers}
