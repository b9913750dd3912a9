"""A queue's items, ``/queues/<queue>``: the list a :class:`~relq.dashboard.store.Filter`
describes, from its URL: a state, a type, text in Error, and a search by a business key
(EntityKey, DedupKey, GroupKey, a notification's recipient: those the queue's worker view
has); ordered by key or by last update; paged by key, never with OFFSET: the next page
reads on from the last row shown, the previous one reads the other way from the first row
shown, the last one reads from the other end. The total is QueueHealth_V's count where
that is the list's (an unfinished state, nothing else), else a count that stops past
COUNT_CAP ("more than 1,000")."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from relq.dashboard import access, privacy
from relq.dashboard.store import (
    LISTED,
    SEARCHES,
    Column,
    Filter,
    Search,
    Store,
    reading_note,
    update_order_served,
)
from relq.dashboard.web import Dashboard, Problem, iso, parse_time
from relq.status import FINISHED, STATES, UNFINISHED, QueueHealth

PAGE = 50  # items per page
COUNT_CAP = 1000  # a total past this is "more than 1,000": the count reads one item more at most
# The orders a list offers: (by_update, newest_first). A finished state's list is by last
# update unless asked otherwise (for a Failed item, when it failed); any other by key.
ORDERS = {"newest": (False, True), "oldest": (False, False), "updated": (True, True),
          "updated-oldest": (True, False)}
ORDER_LABELS = {"newest": "newest first", "oldest": "oldest first", "updated": "last updated first",
                "updated-oldest": "last updated last"}
CURSORS = ("after", "after_updated", "before", "before_updated", "last")  # a page's place in the URL
RECIPIENT = "recipient"  # the URL's one field for a notification's e-mail address or phone number
KEY_SEARCHES = tuple(s for s in SEARCHES if s.field not in ("email_to", "phone_number"))
_PHONE_SEPARATORS = re.compile(r"[\s().-]")


@dataclass(frozen=True)
class Page:
    """The rows a list shows, in its order; ``where``: the Filter they were read with (a page
    before the first one shows the first one instead); ``earlier``, ``later``: whether the
    list has items before the first row shown and after the last one."""

    rows: list[dict[str, Any]]
    where: Filter
    earlier: bool
    later: bool


@dataclass(frozen=True)
class Total:
    """How many items the list holds: ``items``, or more than that when ``more``; ``how``:
    where the figure comes from."""

    items: int
    more: bool
    how: str


def routes(dash: Dashboard) -> list[Route]:
    def items(request: Request) -> Response:
        health = dash.known(request.path_params["queue"])
        queue = health.queue
        dash.require(access.browse(queue))
        offered = offered_searches(dash.store.columns(queue))
        where, order_note = list_filter(request, queue, offered)
        page = read_page(dash.store, queue, where)
        total = total_of(dash.store, queue, health, page)
        recipient = page.where.email_to or page.where.phone_number
        masked = recipient and not dash.settings.show_personal_data
        shown_recipient = privacy.mask(recipient) if masked else recipient
        return dash.page(request, "items.html", queue=queue, rows=page.rows, where=page.where, listed=LISTED,
                         page=page, total=total, cap=COUNT_CAP, order=order_name(page.where),
                         orders=ORDER_LABELS, notes=[n for n in (order_note, reading_note(page.where)) if n],
                         searches=[s for s in KEY_SEARCHES if s in offered],
                         recipient_offered=any(s.field in ("email_to", "phone_number") for s in offered),
                         recipient=recipient, shown_recipient=shown_recipient, statuses=list(STATES),
                         act_problem=dash.act_problem(queue),
                         **pager(request, page))

    return [Route("/queues/{queue}", items, name="items")]


def offered_searches(columns: list[Column]) -> list[Search]:
    """The searches a queue's list offers: those whose column its worker view has."""
    names = {c.name for c in columns}
    return [s for s in SEARCHES if s.column in names]


def list_filter(request: Request, queue: str, offered: list[Search]) -> tuple[Filter, str | None]:
    """The Filter a list's query string describes, and a note when its order cannot be had
    cheaply and the list is shown by key instead. A Problem (400) for what cannot be read."""
    q = request.query_params
    state = q.get("status") or None
    if state is not None and state not in STATES:
        raise Problem(400, f"status must be one of {', '.join(STATES)}, not {state[:40]!r}")
    fields: dict[str, Any] = {"status": state, "type": q.get("type") or None, "error": q.get("error") or None}
    for search in KEY_SEARCHES:
        value = (q.get(search.field) or "").strip()
        if value:
            _offered(search, offered, queue)
            fields[search.field] = value
    recipient = (q.get(RECIPIENT) or "").strip()
    if recipient:
        search = _recipient_search(recipient, offered, queue)
        phone = search.field == "phone_number"
        fields[search.field] = _PHONE_SEPARATORS.sub("", recipient) if phone else recipient
    order = q.get("order") or ("updated" if state in FINISHED else "newest")
    if order not in ORDERS:
        raise Problem(400, f"order must be one of {', '.join(ORDERS)}, not {order[:40]!r}")
    by_update, fields["newest_first"] = ORDERS[order]
    note = None
    try:
        if by_update and not update_order_served(Filter(**fields)):
            note = ("Ordered by last update, a list needs a state or a search: no index holds "
                    "every item by update, so it is shown by key.")
            by_update = False
        fields["by_update"] = by_update
        for name in ("after", "before") + (("after_updated", "before_updated") if by_update else ()):
            text = q.get(name)
            if text:
                fields[name] = parse_time(text, name)
        fields["last"] = q.get("last") == "1"
        return Filter(**fields), note
    except ValueError as exc:
        raise Problem(400, str(exc)) from None


def _offered(search: Search, offered: list[Search], queue: str) -> Search:
    """``search``, or a Problem (400) when the queue's items do not have its column."""
    if search not in offered:
        have = ", ".join(s.label for s in offered) or "nothing"
        raise Problem(400, f"{queue}'s items have no {search.column} to search by (they have: {have})")
    return search


def _recipient_search(recipient: str, offered: list[Search], queue: str) -> Search:
    """An address with @ is an e-mail address; anything else a phone number."""
    wanted = next(s for s in SEARCHES if s.field == ("email_to" if "@" in recipient else "phone_number"))
    return _offered(wanted, offered, queue)


def order_name(where: Filter) -> str:
    return next(name for name, order in ORDERS.items() if order == (where.by_update, where.newest_first))


def read_page(store: Store, queue: str, where: Filter, size: int = PAGE) -> Page:
    """The page ``where`` names, reading one row more than it shows to tell whether the list
    goes on past it (a page read backward: before it)."""
    rows = store.items(queue, where, size + 1)
    if not where.backward:
        return Page(rows[:size], where, earlier=where.after is not None, later=len(rows) > size)
    if len(rows) <= size and where.before is not None:
        # Fewer than a page before the row: the list's start. Show its first page, full, as
        # the First link does, rather than a short page that the next one would overlap.
        first = where.whole()
        rows = store.items(queue, first, size + 1)
        return Page(rows[:size], first, earlier=False, later=len(rows) > size)
    return Page(rows[-size:], where, earlier=len(rows) > size, later=where.before is not None)


def total_of(store: Store, queue: str, health: QueueHealth, page: Page, cap: int = COUNT_CAP) -> Total:
    """How many items the page's list holds: QueueHealth_V's count for an unfinished state with
    nothing else (the health index counted them, and the overview shows the same figure); the
    rows themselves when one page holds them all; else a count through the list's own index
    that stops past ``cap``."""
    where = page.where
    if where.status in UNFINISHED and not where.narrowed:
        return Total(health.items.get(where.status, 0), False, "QueueHealth_V's count")
    if not page.earlier and not page.later:
        return Total(len(page.rows), False, "the items shown")
    counted = store.count(queue, where.whole(), cap)
    return Total(min(counted, cap), counted > cap, f"counted up to {cap:,}")


def pager(request: Request, page: Page) -> dict[str, str | None]:
    """The URLs of the first, previous, next and last pages; None where there is none."""
    where, rows = page.where, page.rows
    return {
        "first_url": query(request, **_place(where.whole())) if page.earlier else None,
        "previous_url": query(request, **_place(where.preceding(rows[0]))) if page.earlier and rows else None,
        "next_url": query(request, **_place(where.following(rows[-1]))) if page.later and rows else None,
        "last_url": query(request, **_place(Filter(last=True))) if page.later else None,
    }


def _place(where: Filter) -> dict[str, str | None]:
    """A page's place as URL parameters: every one of CURSORS, None where it has none."""
    times = {name: getattr(where, name) for name in CURSORS if name != "last"}
    return {**{name: iso(value) if value else None for name, value in times.items()},
            "last": "1" if where.last else None}


def query(request: Request, **changes: str | None) -> str:
    """This list's URL with ``changes`` to its query (None drops a parameter)."""
    params = dict(request.query_params.items())
    params.update(changes)
    kept = {k: v for k, v in params.items() if v}
    return f"{request.url.path}?{urlencode(kept)}" if kept else request.url.path
