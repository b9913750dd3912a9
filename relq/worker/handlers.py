"""What a worker runs: plain Python callables registered per queue, job type and
step, and the few types they use to say how an item ended.

A handler takes an :class:`Item` and returns the response to record (a string, or
None): the item is Completed. To advance a multi-step job it returns
:class:`NextStep`: the step is recorded (which renews the lease) and the handler
of that step runs next; after a retry the item resumes at its recorded step. An
exception is an Error, retried with the database's backoff, unless it is
:class:`Permanent`, which fails the item at once.
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

    def __getitem__(self, column: str) -> Any:
        return self.fields[column]


@dataclass(frozen=True)
class NextStep:
    """Returned by a handler: record ``step`` and run the handler registered for it."""

    step: str
    response: str | None = None


class Permanent(Exception):
    """Raised by a handler for a failure no retry can fix: the item is Failed at once."""


Handler = Callable[[Item], "str | NextStep | None"]


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
