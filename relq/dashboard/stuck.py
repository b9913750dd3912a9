"""Stuck work, ``/queues/<queue>/processing``: a queue's items in Processing, those longest past
their lease first, each with its worker (LockedBy), its lease (LeaseUntil) and how long past it
(or how long until it ends); and who holds what: a row per worker slot with how many items it
holds, how many of them are past their lease, since when it holds them and its oldest lease.

An item is past its lease when its worker stopped renewing it (the process died, hangs, or lost
its database) for longer than the queue's lease; the queue's next claim takes it back
(dbo.Next_<Queue>_utx), so items stay past their lease only while no worker of the queue claims.
Both reads are bounded reads of the queue's lease index through its worker view
(relq.dashboard.store.processing_sql, holders_sql): PAGE items a page, paged by (LeaseUntil,
key), and the workers of the first HOLDERS_CAP items."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from relq.dashboard import access
from relq.dashboard.store import LeasePlace, Store, view
from relq.dashboard.web import Dashboard, Problem, iso, parse_time

PAGE = 100  # items a page
HOLDERS_CAP = 1000  # the workers view counts the first this many items in lease order


def need(queue: str) -> access.Need:
    """What the page reads: the worker view, which QueueAdmin may read (no attempt history)."""
    return access.Need("QueueAdmin", f"{queue}'s items in Processing", ((view(queue), "SELECT"),))


@dataclass(frozen=True)
class Lease:
    """How an item's (or a worker's oldest) lease stands at the database's clock: ``past`` when
    it ran out, ``by_s`` how many whole seconds ago it did, or until it does."""

    until: datetime | None
    past: bool
    by_s: int | None

    @classmethod
    def at(cls, until: datetime | None, now: datetime) -> Lease:
        if until is None:
            return cls(None, False, None)
        seconds = (now - until).total_seconds()
        return cls(until, seconds > 0, int(abs(seconds)))


@dataclass(frozen=True)
class Held:
    """An item in Processing as the page lists it: its row (store.HELD), its lease, and how long
    its worker has held it (since StartedAt, its claim)."""

    row: dict[str, Any]
    lease: Lease
    held_s: int | None


@dataclass(frozen=True)
class Holder:
    """A worker slot (LockedBy; None: an item in Processing that names none) and what it holds."""

    locked_by: str | None
    items: int
    past_lease: int
    held_since: datetime | None
    held_s: int | None  # how long since held_since
    oldest: Lease


@dataclass(frozen=True)
class Stuck:
    """A page: its items in lease order (``after``: the place it was read past; ``later``: more
    follow), and the workers of the first HOLDERS_CAP items (``capped``: there were as many)."""

    items: list[Held]
    after: LeasePlace | None
    later: bool
    holders: list[Holder]
    capped: bool


def _seconds_since(then: datetime | None, now: datetime) -> int | None:
    return None if then is None else max(0, int((now - then).total_seconds()))


def held(rows: list[dict[str, Any]]) -> list[Held]:
    """The items of processing()'s rows, each with its lease and how long it has been held, at
    the read's own ReadAt (the database's SYSUTCDATETIME())."""
    return [Held({k: v for k, v in r.items() if k != "ReadAt"}, Lease.at(r["LeaseUntil"], r["ReadAt"]),
                 _seconds_since(r["StartedAt"], r["ReadAt"])) for r in rows]


def holders_of(rows: list[dict[str, Any]]) -> list[Holder]:
    """The workers of holders()'s rows, in its order (the oldest lease first)."""
    return [Holder(r["LockedBy"], int(r["Items"]), int(r["PastLease"]), r["HeldSince"],
                   _seconds_since(r["HeldSince"], r["ReadAt"]), Lease.at(r["OldestLease"], r["ReadAt"]))
            for r in rows]


def read(store: Store, queue: str, after: LeasePlace | None, size: int = PAGE,
         cap: int = HOLDERS_CAP) -> Stuck:
    """A page of ``queue``'s items in Processing past ``after``, reading one more than it shows to
    tell whether more follow, and the workers of the first ``cap``."""
    rows = store.processing(queue, after, size + 1)
    workers = holders_of(store.holders(queue, cap))
    return Stuck(held(rows[:size]), after, len(rows) > size, workers,
                 capped=sum(h.items for h in workers) >= cap)


def place_of(request: Request) -> LeasePlace | None:
    """The place a page's URL reads past: ``after`` (a key) and ``lease`` (its LeaseUntil;
    absent: it has none). A Problem (400) for what is not a time."""
    q = request.query_params
    if not q.get("after"):
        if q.get("lease"):
            raise Problem(400, "lease names the LeaseUntil of the item named by after: give both")
        return None
    lease = q.get("lease")
    return LeasePlace(parse_time(lease, "lease") if lease else None, parse_time(q["after"], "after"))


def next_url(request: Request, page: Stuck) -> str | None:
    """The URL of the page after ``page``'s last item; None when it is the last page."""
    if not page.later or not page.items:
        return None
    last = page.items[-1]
    params = {"after": iso(last.row["EnqueuedAt"])}
    if last.lease.until is not None:
        params["lease"] = iso(last.lease.until)
    return f"{request.url.path}?{urlencode(params)}"


def routes(dash: Dashboard) -> list[Route]:
    def stuck(request: Request) -> Response:
        health = dash.known(request.path_params["queue"])
        queue = health.queue
        dash.require(need(queue))
        after = place_of(request)
        page = read(dash.store, queue, after, PAGE, HOLDERS_CAP)
        return dash.page(request, "stuck.html", queue=queue, health=health, page=page, page_size=PAGE,
                         cap=HOLDERS_CAP, next_url=next_url(request, page),
                         first_url=request.url.path if after is not None else None)

    return [Route("/queues/{queue}/processing", stuck, name="stuck")]
