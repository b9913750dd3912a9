"""The dashboard's pages, as a Starlette application over a :class:`Store`.

Routes: ``/`` the overview (``/overview`` its live part, which the page's script fetches
every few seconds), ``/queues/<queue>`` a queue's items, ``/queues/<queue>/items/<key>``
an item, ``/metrics`` for Prometheus; and, only with actions allowed, ``POST`` to an
item's control and to a queue's retry of its Failed items of a type. A form carries the
dashboard's CSRF token and the item's token (``UpdatedAt``); the database refuses a stale
one (735705), which the page shows as "changed since you looked"."""

from __future__ import annotations

import hmac
import logging
import secrets
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from relq import db
from relq.dashboard import access, metrics, privacy
from relq.dashboard.chart import History
from relq.dashboard.store import ACTIONS, LISTED, Column, Filter, Store
from relq.errors import Msg, RelqError
from relq.status import STATES, UNFINISHED, QueueHealth, age

HERE = Path(__file__).parent
PAGE = 50  # items per page
log = logging.getLogger("relq.dashboard")

# The controls an item in each state can take (dbo.Move_<Queue>_utx's rules).
OFFERED = {
    "Failed": ("Retry",),
    "Pending": ("Pause", "Reschedule", "Cancel"),
    "Error": ("Pause", "Reschedule", "Cancel"),
    "Paused": ("Resume", "Reschedule", "Cancel"),
    "Processing": ("Cancel",),
}
# What a refusal means to the person who clicked (docs/errors.md).
REFUSALS = {
    Msg.NotFound: "no item has that key any more (purged or archived)",
    Msg.StaleToken: "the item changed since you looked: here it is as it is now; "
                    "try again if it still applies",
    Msg.IllegalTransition: "its lifecycle does not allow that from its present status",
    Msg.InvalidParameter: "a value of the form is missing or invalid",
    Msg.NotEditable: "the item is finished or paused and can no longer change that way",
    Msg.DuplicateKey: "an unfinished item carries its DedupKey now",
    229: "this login may not do that: controls need the role QueueAdmin",
}


@dataclass
class Settings:
    allow_actions: bool = False
    show_personal_data: bool = False
    refresh_s: float = 5.0
    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    clock: Any = time.time
    # The names a request may give in its Host header; None: any. On the loopback address only
    # its own names, so that a web page whose name an attacker points at 127.0.0.1 (DNS
    # rebinding) cannot read the dashboard, nor the CSRF token in its forms.
    allowed_hosts: list[str] | None = None


class Problem(Exception):
    """A page that cannot be shown as asked: the one line a person reads instead."""

    def __init__(self, status: int, line: str) -> None:
        super().__init__(line)
        self.status = status
        self.line = line


def create_app(store: Store, settings: Settings | None = None, history: History | None = None) -> Starlette:
    """The dashboard over ``store``. ``history``: the throughput readings to start from
    (a new dashboard starts with none)."""
    settings = settings or Settings()
    history = history or History(every_s=max(settings.refresh_s, 1.0))
    templates = Jinja2Templates(directory=str(HERE / "templates"))
    templates.env.filters.update(when=_when, age=age, ms=_ms, rate=_rate, short=_short)
    templates.env.globals.update(settings=settings, UNFINISHED=UNFINISHED,
                                 chart=lambda queue: history.svg(queue, settings.clock()))

    def page(request: Request, name: str, status_code: int = 200, **context: Any) -> Response:
        return templates.TemplateResponse(request, name, context, status_code=status_code)

    def require(need: access.Need) -> None:
        line = access.missing(store, need)
        if line:
            raise Problem(403, line)

    def health() -> list[QueueHealth]:
        require(access.look())
        queues = store.health()
        history.add(settings.clock(), queues)
        return queues

    def known(queue: str) -> QueueHealth:
        queues = health()
        for q in queues:
            if q.queue == queue:
                return q
        names = ", ".join(q.queue for q in queues) or "none"
        raise Problem(404, f"no queue {queue!r} in dbo.QueueHealth_V (queues: {names})")

    def overview(request: Request) -> Response:
        return page(request, "overview.html", queues=health())

    def overview_part(request: Request) -> Response:
        return page(request, "_overview.html", queues=health())

    def items(request: Request) -> Response:
        health_of = known(request.path_params["queue"])
        queue = health_of.queue
        require(access.browse(queue))
        where = _filter(request)
        rows = store.items(queue, where, PAGE + 1)  # one more than shown: is there a next page?
        next_url = _query(request, after=_iso(rows[PAGE - 1]["EnqueuedAt"])) if len(rows) > PAGE else None
        rows = rows[:PAGE]
        return page(request, "items.html", queue=queue, rows=rows, where=where, listed=LISTED,
                    next_url=next_url, first_url=_query(request, after=None), statuses=list(STATES),
                    retried=_bulk_result(request), act_problem=act_problem(queue))

    def item(request: Request, message: str | None = None, status_code: int = 200) -> Response:
        queue = known(request.path_params["queue"]).queue
        require(access.browse(queue))
        key = _datetime(request.path_params["key"], "the item's key")
        columns = [c for c in store.columns(queue) if not privacy.is_secret(c)]
        found = store.item(queue, key, [c.name for c in columns])
        if found is None:
            raise Problem(404, f"no {queue} item has the key {_iso(key)} (purged or archived?)")
        done = request.query_params.get("done")
        if message is None and done in ACTIONS:
            message = f"{done}: done."
        cannot_act = act_problem(queue)
        offered = OFFERED.get(found["Status"], ()) if settings.allow_actions and not cannot_act else ()
        return page(request, "item.html", status_code=status_code, queue=queue, key=key,
                    fields=[(c, _shown(c, found.get(c.name), settings)) for c in columns],
                    item=found, attempts=store.attempts(queue, key), message=message,
                    offered=offered,
                    act_problem=cannot_act)

    def act_problem(queue: str) -> str | None:
        """Why this login cannot control the queue's items; None when it can (or actions are off)."""
        return access.missing(store, access.act(queue)) if settings.allow_actions else None

    async def control(request: Request) -> Response:
        form = await request.form()
        _check_form(form)
        return await run_in_threadpool(_control, request, form)

    def _control(request: Request, form: Any) -> Response:
        queue, action = request.path_params["queue"], request.path_params["action"]
        if action not in ACTIONS:
            raise Problem(404, f"no control {action!r} (controls: {', '.join(ACTIONS)})")
        known(queue)
        require(access.act(queue))
        key = _datetime(request.path_params["key"], "the item's key")
        token = _datetime(str(form.get("token", "")), "the item's token")
        when = str(form.get("scheduled_for", "")).strip()
        scheduled_for = _datetime(when, "the new due time") if when else None
        if action == "Reschedule" and scheduled_for is None:
            return item(request, "Reschedule: give the new due time (UTC).", 400)
        try:
            after = store.act(queue, action, key, token, scheduled_for)
        except db.SqlError as exc:
            log.info("dashboard: %s %s %s by %s: refused, %s", action, queue, _iso(key), _client(request),
                     exc)
            reason = REFUSALS.get(exc.number or 0, str(exc))
            return item(request, f"{action} refused: {reason}.", 409 if exc.number == Msg.StaleToken else 400)
        log.info("dashboard: %s %s %s by %s: done, now %s", action, queue, _iso(key), _client(request),
                 after.get("Status"))
        url = request.url_for("item", queue=queue, key=_iso(key)).include_query_params(done=action)
        return RedirectResponse(str(url), status_code=303)

    async def retry_failed(request: Request) -> Response:
        """Retry every Failed item of a type, one control call per item, each with the token
        it was read with; the ones that changed meanwhile are counted, not forced."""
        form = await request.form()
        _check_form(form)
        return await run_in_threadpool(_retry_failed, request, form)

    def _retry_failed(request: Request, form: Any) -> Response:
        queue = request.path_params["queue"]
        known(queue)
        require(access.browse(queue))
        require(access.act(queue))
        job_type = str(form.get("type", "")).strip()
        if not job_type:
            raise Problem(400, "retrying Failed items: choose a type")
        counts = {"retried": 0, "stale": 0, "refused": 0}
        after = None
        while True:
            rows = store.items(queue, Filter("Failed", job_type, None, False, after), 500)
            for row in rows:
                try:
                    store.act(queue, "Retry", row["EnqueuedAt"], row["UpdatedAt"])
                    counts["retried"] += 1
                except db.SqlError as exc:
                    counts["stale" if exc.number == Msg.StaleToken else "refused"] += 1
            if len(rows) < 500:
                break
            after = rows[-1]["EnqueuedAt"]
        log.info("dashboard: Retry %s Failed %s items by %s: %d retried, %d changed since read, %d refused",
                 queue, job_type, _client(request), counts["retried"], counts["stale"], counts["refused"])
        url = request.url_for("items", queue=queue).include_query_params(status="Failed", type=job_type,
                                                                         **counts)
        return RedirectResponse(str(url), status_code=303)

    def _check_form(form: Any) -> None:
        if not settings.allow_actions:
            raise Problem(403, "actions are off: start the dashboard with --allow-actions to control items")
        if not hmac.compare_digest(str(form.get("csrf", "")).encode(), settings.csrf.encode()):
            raise Problem(403, "this form did not come from this dashboard (or it restarted): "
                               "reload the page")

    def metrics_text(request: Request) -> Response:
        try:
            line = access.missing(store, access.look())
            if line:
                return PlainTextResponse(line + "\n", status_code=403)
            queues = store.health()
        except RelqError as exc:
            return PlainTextResponse(f"{unavailable(exc)}\n", status_code=503)
        history.add(settings.clock(), queues)
        return Response(metrics.exposition(queues), media_type=metrics.CONTENT_TYPE)

    async def problem(request: Request, exc: Exception) -> Response:
        if isinstance(exc, Problem):
            status_code, line = exc.status, exc.line
        elif isinstance(exc, HTTPException):
            status_code, line = exc.status_code, exc.detail
        else:  # a RelqError: the server refused or went away
            status_code, line = 503, unavailable(exc)
        return page(request, "problem.html", status_code=status_code, line=line)

    routes = [
        Route("/", overview, name="overview"),
        Route("/overview", overview_part, name="overview_part"),
        Route("/queues/{queue}", items, name="items"),
        Route("/queues/{queue}/items/{key}", item, name="item"),
        Route("/queues/{queue}/items/{key}/{action}", control, methods=["POST"], name="control"),
        Route("/queues/{queue}/retry-failed", retry_failed, methods=["POST"], name="retry_failed"),
        Route("/metrics", metrics_text, name="metrics"),
        Mount("/static", StaticFiles(directory=str(HERE / "static")), name="static"),
    ]
    handlers = {Problem: problem, RelqError: problem, HTTPException: problem}
    middleware = []
    if settings.allowed_hosts is not None:
        middleware.append(Middleware(TrustedHostMiddleware, allowed_hosts=settings.allowed_hosts))
    return Starlette(routes=routes, exception_handlers=handlers, middleware=middleware)


def unavailable(exc: RelqError) -> str:
    """What a page says when the database failed: SQL Server's own message; for a failed
    connect, which names the server and login, only that it failed (the log has the line)."""
    if isinstance(exc, db.SqlError):
        return str(exc)
    log.warning("dashboard: %s", exc)
    return "cannot reach the database: the dashboard's log says why"


def _filter(request: Request) -> Filter:
    q = request.query_params
    after = q.get("after")
    return Filter(status=q.get("status") or None, type=q.get("type") or None, error=q.get("error") or None,
                  newest_first=q.get("order", "newest") != "oldest",
                  after=_datetime(after, "after") if after else None)


def _bulk_result(request: Request) -> dict[str, int] | None:
    q = request.query_params
    if "retried" not in q:
        return None
    try:
        return {k: int(q.get(k, "0")) for k in ("retried", "stale", "refused")}
    except ValueError:
        return None


def _query(request: Request, **changes: str | None) -> str:
    params = {k: v for k, v in request.query_params.items() if k not in ("retried", "stale", "refused")}
    params.update(changes)
    kept = {k: v for k, v in params.items() if v}
    return f"{request.url.path}?{urlencode(kept)}" if kept else request.url.path


def _client(request: Request) -> str:
    return request.client.host if request.client else "?"


def _datetime(text: str, what: str) -> datetime:
    try:
        return db.utc(datetime.fromisoformat(text.strip().replace(" ", "T")))
    except ValueError:
        raise Problem(400, f"{what} must be a date and time such as 2026-01-31T12:00:00, "
                           f"not {text[:40]!r}") from None


def _iso(value: datetime) -> str:
    return value.isoformat(timespec="microseconds")


def _shown(column: Column, value: Any, settings: Settings) -> Any:
    if value is not None and privacy.is_personal(column) and not settings.show_personal_data:
        return privacy.mask(value)
    return value


def _when(value: Any) -> str:
    # Keys and tokens are whole microseconds (dbo.QueueNextKey_fn): two items a millisecond
    # apart must not look alike.
    if isinstance(value, datetime):
        return value.isoformat(sep=" ", timespec="microseconds")
    return "" if value is None else str(value)


def _ms(value: int | None) -> str:
    return "-" if value is None else f"{value} ms"


def _rate(value: float) -> str:
    return f"{value:.1f}"


def _short(value: Any, width: int = 80) -> str:
    text = "" if value is None else " ".join(str(value).split())
    return text if len(text) <= width else text[: width - 1] + "…"
