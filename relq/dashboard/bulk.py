"""Actions on many items: Retry, Cancel, Reschedule, or Purge (of finished items), on every
item of a list as its query string describes it (items.list_filter: the very Filter the
list shows), or on the rows ticked on it.

``GET /queues/<queue>/bulk?action=<A>&scope=list&<the list's query>`` counts the list's
items and asks to confirm, naming the count and the filter; ``scope=ticked`` with a
``pick=<key>/<token>`` per ticked row asks the same of those rows. ``POST`` to the same
address, with the CSRF token and the count confirmed, starts a :class:`Job` in a thread of
the dashboard process and sends the browser to its page, ``/queues/<queue>/bulk/jobs/<id>``,
which polls ``.../progress`` (an HTML fragment; ``.../progress.json`` the same in JSON) and
can stop it (``POST .../stop``).

A job reads the list in batches of BATCH, in key order, each batch past the last key of the
one before (so no item is read twice) and no further than the newest key the confirmation
counted (so no item enqueued since is touched), each batch when the one before is done (so
an item that left the list meanwhile is not in it). It calls each item's control procedure
with the token the batch read: dbo.<Action>_<Queue>_trx, or for Purge dbo.Purge_<Queue>_trx's
exact mode with that one key; each item is its own transaction. An item that changed since it
was read is refused by the database (735705) and counted as stale, never forced. One job per
queue runs at a time: a second click, or a second person, is shown the one running."""

from __future__ import annotations

import dataclasses
import secrets
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any
from urllib.parse import urlencode

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from relq import db
from relq.dashboard import access, items, privacy
from relq.dashboard.item import REFUSALS
from relq.dashboard.store import SEARCHES, CallLost, Filter, Store, Unreachable, purge_procedure
from relq.dashboard.web import Dashboard, Problem, client, iso, log, parse_time
from relq.errors import Msg, RelqError
from relq.status import FINISHED

BATCH = 100  # items a job reads at a time
COUNT_CAP = 1_000_000  # a confirmation counts up to this many items; past it, "more than"
PICKS = 200  # ticked rows at most (a list's page shows items.PAGE)
KEPT = 20  # the finished jobs a dashboard keeps to be looked at
PAUSE_S = 0.02  # between batches, so that pages and scrapes get the store's connection
POLL_S = 1.0  # how often a job's page asks for its progress

# The bulk actions: the states each acts on (dbo.Move_<Queue>_utx's rules; Purge: the finished
# ones), and what an item it did is called.
STATES = {"Retry": ("Failed",), "Cancel": ("Pending", "Processing", "Error", "Paused"),
          "Reschedule": ("Pending", "Error", "Paused"), "Purge": FINISHED}
DONE = {"Retry": "retried", "Cancel": "cancelled", "Reschedule": "rescheduled", "Purge": "purged"}
SCOPES = ("list", "ticked")
# The query parameters of the confirmation that are not the list's own.
OWN = ("action", "scope", "pick")
# The Filter's fields that say which page of the list, or in which order, not which items.
PLACE = ("newest_first", "by_update", "after", "after_updated", "before", "before_updated", "last")
HELD = "another session held it (an operator's action or a purge): left as it is"
UNFINISHED_PURGE = "it is not finished: only finished items are purged"


@dataclass
class Job:
    """A bulk action under way or done. ``where``: the list's Filter (None: ``picks``, the ticked
    rows' keys and tokens); ``upto``: the newest key the confirmation counted; ``confirmed``: the
    count the person confirmed (COUNT_CAP + 1: more than COUNT_CAP). ``state``: running,
    stopping, stopped (by a person), done, or failed (``problem`` says why)."""

    id: str
    queue: str
    action: str
    described: str  # the items, in words: "the 13 Failed CustomerSync items of SyncQueue ..."
    confirmed: int
    client: str
    back: str  # the list's address
    where: Filter | None = None
    upto: datetime | None = None
    picks: tuple[tuple[datetime, datetime], ...] = ()
    scheduled_for: datetime | None = None
    state: str = "running"
    done: int = 0
    stale: int = 0
    refused: int = 0
    reasons: Counter[str] = field(default_factory=Counter)  # why items were refused, and how many
    problem: str | None = None
    stopped_by: str | None = None
    started: float = field(default_factory=time.time)
    ended: float | None = None
    stop: threading.Event = field(default_factory=threading.Event, repr=False)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def touched(self) -> int:
        """Items a control procedure was called for."""
        return self.done + self.stale + self.refused

    @property
    def running(self) -> bool:
        return self.state in ("running", "stopping")

    @property
    def more(self) -> bool:
        return self.confirmed > COUNT_CAP

    def count(self, outcome: str, reason: str | None = None) -> None:
        with self.lock:
            setattr(self, outcome, getattr(self, outcome) + 1)
            if reason:
                self.reasons[reason] += 1

    def snapshot(self) -> dict[str, Any]:
        """The job as its page and progress.json show it."""
        with self.lock:
            return {"id": self.id, "queue": self.queue, "action": self.action, "described": self.described,
                    "state": self.state, "confirmed": self.confirmed, "more": self.more,
                    "touched": self.touched, "done": self.done, "stale": self.stale, "refused": self.refused,
                    "reasons": dict(self.reasons), "problem": self.problem, "stopped_by": self.stopped_by}


class Jobs:
    """A dashboard's jobs, in memory: the running ones and the last KEPT finished ones."""

    def __init__(self, kept: int = KEPT) -> None:
        self._jobs: dict[str, Job] = {}
        self._kept = kept
        self._lock = threading.Lock()

    def running(self, queue: str) -> Job | None:
        with self._lock:
            return next((j for j in self._jobs.values() if j.queue == queue and j.running), None)

    def get(self, queue: str, job_id: str) -> Job:
        with self._lock:
            job = self._jobs.get(job_id)
        if job is None or job.queue != queue:
            raise Problem(404, f"no bulk job {job_id[:40]!r} on {queue}: the dashboard keeps the last "
                               f"{self._kept} finished ones, and none from before it restarted")
        return job

    def start(self, job: Job, work: Callable[[Job], None]) -> Job:
        """Run ``work(job)`` in a thread of its own; a Problem (409) while the queue has one running."""
        with self._lock:
            running = next((j for j in self._jobs.values() if j.queue == job.queue and j.running), None)
            if running is not None:
                raise Problem(409, f"a bulk {running.action} of {running.described} is running on "
                                   f"{job.queue}: stop it or wait for it to end "
                                   f"(/queues/{job.queue}/bulk/jobs/{running.id})")
            finished = [j for j in self._jobs.values() if not j.running]
            for old in finished[: max(0, len(finished) - self._kept)]:
                del self._jobs[old.id]
            self._jobs[job.id] = job
        threading.Thread(target=work, args=(job,), name=f"relq-bulk-{job.id}", daemon=True).start()
        return job


# -- what a job does ---------------------------------------------------------------------------


def batches(store: Store, queue: str, where: Filter, upto: datetime,
            size: int = BATCH) -> Iterator[list[tuple[datetime, datetime]]]:
    """The (key, token) of the items of ``where``'s set whose key is ``upto`` or older, in key
    order, a batch at a time: each read when the one before has been acted on, past its last key."""
    by_key = replace(where.whole(), by_update=False, newest_first=False)
    after: datetime | None = None
    while True:
        rows = store.items(queue, replace(by_key, after=after), size)
        keys = [r["EnqueuedAt"] for r in rows]
        if any(k <= prev for prev, k in zip([after, *keys], keys, strict=False) if prev is not None):
            raise RelqError(f"{queue}'s list came back out of key order: the job stopped rather than "
                            "risk touching an item twice")
        within = [(r["EnqueuedAt"], r["UpdatedAt"]) for r in rows if r["EnqueuedAt"] <= upto]
        if within:
            yield within
        if len(rows) < size or len(within) < len(rows):
            return
        after = keys[-1]


def picked(picks: tuple[tuple[datetime, datetime], ...],
           size: int = BATCH) -> Iterator[list[tuple[datetime, datetime]]]:
    ordered = sorted(picks)
    for at in range(0, len(ordered), size):
        yield ordered[at:at + size]


def apply(store: Store, job: Job, key: datetime, token: datetime) -> tuple[str, str | None]:
    """Act on one item; its outcome (done, stale, refused) and, when refused, why."""
    if job.action == "Purge":
        return _purge(store, job.queue, key, token)
    try:
        store.act(job.queue, job.action, key, token, job.scheduled_for)
    except db.SqlError as exc:
        return _refusal(exc)
    return "done", None


def _refusal(exc: db.SqlError) -> tuple[str, str | None]:
    if exc.number in (Msg.StaleToken, Msg.NotFound):  # changed, or gone, since the batch read it
        return "stale", None
    return "refused", REFUSALS.get(exc.number or 0, str(exc))


def _purge(store: Store, queue: str, key: datetime, token: datetime) -> tuple[str, str | None]:
    try:
        if store.purge_item(queue, key, token):
            return "done", None
    except db.SqlError as exc:
        return _refusal(exc)
    # The exact mode says how many it removed, not why it left one: the item as it is now does.
    now = store.item(queue, key, ["UpdatedAt", "Status"])
    if now is None or now["UpdatedAt"] != token:
        return "stale", None
    return "refused", HELD if now["Status"] in FINISHED else UNFINISHED_PURGE


def run(job: Job, store: Store, pause_s: float = PAUSE_S) -> None:
    """Work ``job`` through to its end, a stop, or a failure; then log one line."""
    key: datetime | None = None
    try:
        if job.where is None:
            source = picked(job.picks, BATCH)
        elif job.upto is None:
            raise RelqError("a list's job needs the newest key its confirmation counted")
        else:
            source = batches(store, job.queue, job.where, job.upto, BATCH)
        for batch in source:
            for key, token in batch:
                if job.stop.is_set():
                    return
                job.count(*apply(store, job, key, token))
            key = None
            if job.stop.wait(pause_s):
                return
    except CallLost as exc:
        job.problem = (f"the connection to the database broke during the {job.action} of the item "
                       f"{iso(key) if key else '?'}, before its answer came: it may or may not have been "
                       f"{DONE[job.action]}; the job stopped there. Look at that item before acting again "
                       f"({exc.error})")
    except Unreachable:
        job.problem = "the database could not be reached: nothing more was sent; the dashboard's log says why"
    except RelqError as exc:
        job.problem = f"the job stopped: {exc}"
    except Exception as exc:  # a thread's failure is said on the page and in the log, never lost
        log.exception("dashboard: bulk job %s failed", job.id)
        job.problem = f"the job failed: {exc!r}"
    finally:
        _end(job)


def _end(job: Job) -> None:
    with job.lock:
        job.state = "failed" if job.problem else "stopped" if job.stop.is_set() else "done"
        job.ended = time.time()
    how = {"done": "finished", "stopped": f"stopped by {job.stopped_by}",
           "failed": f"stopped: {job.problem}"}[job.state]
    log.info("dashboard: %s %s by %s: %s confirmed, %d touched: %d %s, %d changed since read, %d refused%s; "
             "%s (job %s)", job.action, job.described, job.client, _confirmed(job), job.touched, job.done,
             DONE[job.action], job.stale, job.refused, _reasons(job), how, job.id)


def _confirmed(job: Job) -> str:
    return f"more than {COUNT_CAP:,}" if job.more else str(job.confirmed)


def _reasons(job: Job) -> str:
    return "".join(f" ({n}: {why})" for why, n in job.reasons.items())


# -- the items in words --------------------------------------------------------------------------


def describe(queue: str, where: Filter, count: int, show_personal_data: bool = False) -> str:
    """The items of ``where``'s set, in words, with their count: "the 13 Failed CustomerSync
    items of SyncQueue whose error contains '404'". Every criterion a Filter has is said, a
    new one by its name; a recipient is masked unless the dashboard shows personal data."""
    said = {"status", "type", "error", *PLACE, *(s.field for s in SEARCHES)}
    many = f"more than {COUNT_CAP:,}" if count > COUNT_CAP else f"the {count:,}"
    kind = " ".join(v for v in (where.status, where.type) if v)
    text = f"{many} {kind + ' ' if kind else ''}item{'' if count == 1 else 's'} of {queue}"
    for search, value in where.searches():
        personal = search.field in ("email_to", "phone_number")
        shown = privacy.mask(value) if personal and not show_personal_data else value
        text += f" {'sent to' if personal else 'with ' + search.label} '{shown}'"
    for f in dataclasses.fields(where):
        value = getattr(where, f.name)
        if f.name not in said and value not in (None, False, f.default):
            text += f" with {f.name.replace('_', ' ')} '{value}'"
    if where.error:
        text += f" whose error contains '{where.error}'"
    return text


def offered(status: str | None) -> list[str]:
    """The bulk actions a list of ``status`` offers on all its items."""
    return [a for a, states in STATES.items() if status in states]


# -- the pages ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Asked:
    """What a confirmation or its POST names: the action, the list's Filter and address, and the
    ticked rows (scope ticked)."""

    queue: str
    action: str
    scope: str
    where: Filter
    back: str
    picks: tuple[tuple[datetime, datetime], ...]


def routes(dash: Dashboard, jobs: Jobs | None = None) -> list[Route]:
    jobs = jobs or Jobs()
    dash.templates.env.globals.update(bulk_running=jobs.running, bulk_offered=offered, bulk_list=_list_params,
                                      bulk_may_purge=lambda queue: _purge_problem(dash, queue) is None)

    def asked(request: Request) -> Asked:
        """The request's action, scope, list and ticked rows, checked; the login's rights too."""
        if not dash.settings.allow_actions:
            raise Problem(403, "actions are off: start the dashboard with --allow-actions to control items")
        q = request.query_params
        action, scope = q.get("action", ""), q.get("scope", "list")
        if action not in STATES:
            raise Problem(400, f"action must be one of {', '.join(STATES)}, not {action[:40]!r}")
        if scope not in SCOPES:
            raise Problem(400, f"scope must be list or ticked, not {scope[:40]!r}")
        queue = dash.known(request.path_params["queue"]).queue
        dash.require(access.browse(queue))
        dash.require(access.act(queue))
        if action == "Purge":
            line = _purge_problem(dash, queue)
            if line:
                raise Problem(403, line)
        where, _ = items.list_filter(request, queue, items.offered_searches(dash.store.columns(queue)))
        back = str(request.url_for("items", queue=queue))
        params = _list_params(request)
        if params:
            back += "?" + urlencode(params)
        picks: tuple[tuple[datetime, datetime], ...] = ()
        if scope == "ticked":
            picks = _picks(q.getlist("pick"))
        elif where.status not in STATES[action]:
            raise Problem(400, f"{action} acts on {' or '.join(STATES[action])} items: list one of those "
                               f"states first (this list has {where.status or 'every state'}), or tick rows")
        return Asked(queue, action, scope, where.whole(), back, picks)

    def confirm(request: Request) -> Response:
        a = asked(request)
        running = jobs.running(a.queue)
        show = dash.settings.show_personal_data
        if a.scope == "ticked":
            count, upto = len(a.picks), None
            described = f"the {count} ticked item{'' if count == 1 else 's'} of {a.queue}"
        else:
            count = dash.store.count(a.queue, a.where, COUNT_CAP)
            newest = dash.store.items(a.queue, replace(a.where, by_update=False, newest_first=True), 1)
            upto = newest[0]["EnqueuedAt"] if newest else None
            described = describe(a.queue, a.where, count, show)
        return dash.page(request, "bulk_confirm.html", queue=a.queue, action=a.action, scope=a.scope,
                         count=count, upto=upto, described=described, back=a.back, picks=a.picks,
                         running=running, done_word=DONE[a.action], cap=COUNT_CAP)

    async def bulk(request: Request) -> Response:
        if request.method == "GET":
            return await run_in_threadpool(confirm, request)
        form = await request.form()
        dash.check_form(form)
        return await run_in_threadpool(begin, request, form)

    def begin(request: Request, form: Any) -> Response:
        a = asked(request)
        confirmed = str(form.get("confirmed", "")).strip()
        if not confirmed.isdigit() or int(confirmed) < 1:
            raise Problem(400, f"{a.action}: nothing was done: confirm the count on the confirmation page "
                               "first")
        when = str(form.get("scheduled_for", "")).strip()
        scheduled_for = parse_time(when, "the new due time") if when and a.action == "Reschedule" else None
        if a.action == "Reschedule" and scheduled_for is None:
            raise Problem(400, "Reschedule: nothing was done: give the new due time (UTC)")
        if a.scope == "ticked":
            count = len(a.picks)
            described = f"the {count} ticked item{'' if count == 1 else 's'} of {a.queue}"
            job = Job(_new_id(), a.queue, a.action, described, count, client(request), a.back,
                      picks=a.picks, scheduled_for=scheduled_for)
        else:
            upto = parse_time(str(form.get("upto", "")), "the newest key counted")
            count = min(int(confirmed), COUNT_CAP + 1)
            job = Job(_new_id(), a.queue, a.action, describe(a.queue, a.where, count,
                                                             dash.settings.show_personal_data),
                      count, client(request), a.back, where=a.where, upto=upto, scheduled_for=scheduled_for)
        jobs.start(job, lambda j: run(j, dash.store))
        ticked = f": {', '.join(iso(key) for key, _ in job.picks)}" if job.picks else ""
        log.info("dashboard: %s %s by %s: started (job %s)%s", job.action, job.described, job.client, job.id,
                 ticked)
        url = request.url_for("bulk_job", queue=a.queue, job=job.id)
        return RedirectResponse(str(url), status_code=303)

    def job_page(request: Request) -> Response:
        job = jobs.get(request.path_params["queue"], request.path_params["job"])
        return dash.page(request, "bulk_job.html", queue=job.queue, job=job, s=job.snapshot(),
                         done_word=DONE[job.action], cap=COUNT_CAP, poll_s=POLL_S)

    def progress(request: Request) -> Response:
        job = jobs.get(request.path_params["queue"], request.path_params["job"])
        return dash.page(request, "_bulk_progress.html", queue=job.queue, job=job, s=job.snapshot(),
                         done_word=DONE[job.action], cap=COUNT_CAP)

    def progress_json(request: Request) -> Response:
        job = jobs.get(request.path_params["queue"], request.path_params["job"])
        return JSONResponse(job.snapshot())

    async def stop(request: Request) -> Response:
        form = await request.form()
        dash.check_form(form)
        job = jobs.get(request.path_params["queue"], request.path_params["job"])
        with job.lock:
            if job.running and not job.stop.is_set():
                job.stopped_by = client(request)
                job.state = "stopping"
                job.stop.set()
        url = request.url_for("bulk_job", queue=job.queue, job=job.id)
        return RedirectResponse(str(url), status_code=303)

    return [
        Route("/queues/{queue}/bulk", bulk, methods=["GET", "POST"], name="bulk"),
        Route("/queues/{queue}/bulk/jobs/{job}", job_page, name="bulk_job"),
        Route("/queues/{queue}/bulk/jobs/{job}/progress", progress, name="bulk_progress"),
        Route("/queues/{queue}/bulk/jobs/{job}/progress.json", progress_json, name="bulk_progress_json"),
        Route("/queues/{queue}/bulk/jobs/{job}/stop", stop, methods=["POST"], name="bulk_stop"),
    ]


def _purge_problem(dash: Dashboard, queue: str) -> str | None:
    """Why this login cannot purge the queue's items; None when it can."""
    return access.missing(dash.store, access.Need("QueueAdmin", f"purging {queue}'s finished items",
                                                  ((purge_procedure(queue), "EXECUTE"),)))


def _list_params(request: Request) -> list[tuple[str, str]]:
    """The list's own query parameters (a confirmation's, less its own), to go back to it."""
    return [(k, v) for k, v in request.query_params.multi_items() if k not in OWN]


def _picks(values: list[str]) -> tuple[tuple[datetime, datetime], ...]:
    """The ticked rows, each ``<key>/<token>``, as the list wrote them."""
    if not values:
        raise Problem(400, "no row is ticked: tick the rows to act on, or act on the whole list")
    if len(values) > PICKS:
        raise Problem(400, f"at most {PICKS} ticked rows at a time, not {len(values)}")
    picks: dict[datetime, datetime] = {}
    for value in values:
        key_text, _, token_text = value.partition("/")
        key = parse_time(key_text, "a ticked row's key")
        token = parse_time(token_text, "a ticked row's token")
        if picks.setdefault(key, token) != token:
            raise Problem(400, f"the row {iso(key)} is ticked twice with two tokens")
    return tuple(sorted(picks.items()))


def _new_id() -> str:
    return secrets.token_urlsafe(9)
