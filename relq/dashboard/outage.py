"""What the dashboard shows while the database is away (relq.dashboard.store says when it is,
and replaces the connection): the overview keeps the figures of the last good read, greyed
and marked stale under a banner that says since when nothing could be read; any other page
is a 503 page naming the last good read. :class:`Watch` keeps that read and the failures
since; a good read of the health views ends the outage."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import Response

from relq.dashboard.store import outage_of
from relq.errors import RelqError
from relq.status import QueueHealth, age

if TYPE_CHECKING:
    from relq.dashboard.web import Dashboard

# What each kind of failure says, after "The database is not answering: ".
WHY = {
    "unreachable": "no connection to it can be opened",
    "broken": "its connection broke, and a new one broke too",
    "timeout": "a read waited too long and was stopped",
    "lost": "a connection broke during a call",
}
HEADER = "X-Relq-Outage"  # on a page drawn from the last good read; refresh.js swaps such a page in


@dataclass(frozen=True)
class Outage:
    """An outage as a page says it: times in UTC, as text."""

    kind: str
    why: str
    since: str  # when reads began to fail
    last_read: str | None  # the last good read of the health views; None: none since the start
    ago: str | None  # how long before now that was


@dataclass
class Watch:
    """The last good read of the health views, and since when reads fail (None: they do not)."""

    read_at: float | None = None
    queues: list[QueueHealth] = field(default_factory=list)
    failing_since: float | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def good(self, at: float, queues: list[QueueHealth]) -> None:
        with self._lock:
            self.read_at, self.queues, self.failing_since = at, queues, None

    def failed(self, at: float, exc: RelqError) -> Outage:
        """Note a failure that says the database is away; the outage as a page says it. A call's
        lost answer is said, not noted: it tells nothing of the reads."""
        kind = outage_of(exc) or "unreachable"
        with self._lock:
            if kind != "lost" and self.failing_since is None:
                self.failing_since = at
            return self._seen(at, kind)

    def _seen(self, now: float, kind: str) -> Outage:
        since = self.failing_since if self.failing_since is not None else now
        if self.read_at is None:
            return Outage(kind, WHY[kind], utc(since, now), None, None)
        ago = age(max(0, int(now - self.read_at)))
        return Outage(kind, WHY[kind], utc(since, now), utc(self.read_at, now), ago)


def utc(at: float, now: float) -> str:
    """``at`` (seconds since the epoch) as a page shows it: the time of day in UTC, with the
    date when it is not the day of ``now``."""
    when, today = datetime.fromtimestamp(at, timezone.utc), datetime.fromtimestamp(now, timezone.utc)
    return when.strftime("%H:%M:%S UTC" if when.date() == today.date() else "%Y-%m-%d %H:%M:%S UTC")


def overview(dash: Dashboard, request: Request, template: str, status_code: int = 200,
             **context: Any) -> Response:
    """The overview (``template``: the page or its live part): the health views as read now;
    when the database is away, as last read, with the outage (503, and HEADER). ``context``:
    more for the page (the queue controls' message or refusal)."""
    try:
        return dash.page(request, template, status_code=status_code, queues=dash.health(), outage=None,
                         **context)
    except RelqError as exc:
        if outage_of(exc) is None:
            raise
        seen = dash.watch.failed(dash.settings.clock(), exc)
        response = dash.page(request, template, status_code=503, queues=dash.watch.queues, outage=seen,
                             **context)
    response.headers[HEADER] = seen.kind
    return response


def problem(dash: Dashboard, request: Request, exc: RelqError, line: str | None = None,
            **context: Any) -> Response:
    """The page (503) of a request the database's absence stopped: ``line`` says what did not
    happen (by default, that the page cannot be shown), with the outage and the last good read."""
    seen = dash.watch.failed(dash.settings.clock(), exc)
    if line is None:
        line = ("An action's connection broke before its answer came: it may or may not have run. "
                "Look at the items before you act again." if seen.kind == "lost"
                else "This page cannot be shown without the database.")
    response = dash.page(request, "problem.html", status_code=503, line=line, outage=seen, **context)
    response.headers[HEADER] = seen.kind
    return response
