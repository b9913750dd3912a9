"""What every page of the dashboard shares: :class:`Settings`, :class:`Problem` (the one
line a person reads instead of a page), :class:`Dashboard` (the store, the settings, the
templates, and the checks a page makes before it reads or acts), and how times are read
from a URL and shown."""

from __future__ import annotations

import hmac
import json
import logging
import re
import secrets
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.templating import Jinja2Templates

from relq import db
from relq.dashboard import access, guard
from relq.dashboard.chart import History
from relq.dashboard.outage import Watch
from relq.dashboard.store import Store, Unreachable
from relq.errors import RelqError
from relq.status import UNFINISHED, QueueHealth, age

HERE = Path(__file__).parent
log = logging.getLogger("relq.dashboard")


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
    # The proxies whose X-Forwarded-For and X-Forwarded-Proto are believed, as networks
    # (guard.trusted_proxies); none: those headers are ignored from everyone, loopback included.
    trusted_proxies: tuple[str, ...] = ()
    # The header a trusted proxy names its authenticated user in (X-Forwarded-User); None: none.
    user_header: str | None = None


class Problem(Exception):
    """A page that cannot be shown as asked: the one line a person reads instead."""

    def __init__(self, status: int, line: str) -> None:
        super().__init__(line)
        self.status = status
        self.line = line


class Dashboard:
    """What the pages share. ``history``: the throughput readings the overview's chart
    draws (a new dashboard starts with none)."""

    def __init__(self, store: Store, settings: Settings, history: History) -> None:
        self.store = store
        self.settings = settings
        self.history = history
        self.watch = Watch()  # the last good read, for the pages of an outage (outage.py)
        self.templates = Jinja2Templates(directory=str(HERE / "templates"))
        self.templates.env.filters.update(when=_when, age=age, ms=_ms, rate=_rate, short=_short)
        self.templates.env.globals.update(settings=settings, UNFINISHED=UNFINISHED,
                                          chart=lambda queue: history.svg(queue, settings.clock()))

    def page(self, request: Request, name: str, status_code: int = 200, **context: Any) -> Response:
        return self.templates.TemplateResponse(request, name, context, status_code=status_code)

    def require(self, need: access.Need) -> None:
        line = access.missing(self.store, need)
        if line:
            raise Problem(403, line)

    def health(self) -> list[QueueHealth]:
        self.require(access.look())
        queues = self.store.health()
        self.history.add(self.settings.clock(), queues)
        self.watch.good(self.settings.clock(), queues)
        return queues

    def known(self, queue: str) -> QueueHealth:
        queues = self.health()
        for q in queues:
            if q.queue == queue:
                return q
        names = ", ".join(q.queue for q in queues) or "none"
        raise Problem(404, f"no queue {queue!r} in dbo.QueueHealth_V (queues: {names})")

    def login(self) -> str | None:
        """The database login the dashboard acts as (the store reads it once); None while it
        cannot be read."""
        try:
            return self.store.login()
        except RelqError:
            return None

    def act_problem(self, queue: str) -> str | None:
        """Why this login cannot control the queue's items; None when it can (or actions are off)."""
        return access.missing(self.store, access.act(queue)) if self.settings.allow_actions else None

    def check_form(self, form: Any) -> None:
        """Refuse a form when actions are off or it did not come from this dashboard."""
        if not self.settings.allow_actions:
            raise Problem(403, "actions are off: start the dashboard with --allow-actions to control items")
        if not hmac.compare_digest(str(form.get("csrf", "")).encode(), self.settings.csrf.encode()):
            raise Problem(403, "this form did not come from this dashboard (or it restarted): "
                               "reload the page")


def unavailable(exc: RelqError) -> str:
    """What a page says when the database failed: SQL Server's own message; for a failed
    connect, which names the server and login, only that it failed (the log has the line)."""
    if isinstance(exc, db.SqlError):
        return str(exc)
    if not isinstance(exc, Unreachable):  # the store logs a connect that failed, once per try
        log.warning("dashboard: %s", exc)
    return "cannot reach the database: the dashboard's log says why"


def client(request: Request) -> str:
    """Who acted, as an audit line and a bulk job's page say it: the user a trusted proxy named
    (guard.py), else the database login the dashboard acts as, then the client's address: the
    socket's, or the one a trusted proxy gave (``via`` that proxy), never a forwarded header from
    anyone else. ``user alice at 203.0.113.7 via 10.0.0.2``, ``login relq_ops at 127.0.0.1``; the
    address alone when the login cannot be read (the database is away). Names are quoted when
    they hold anything but letters, digits and ``._@\\/+:-``, so that a line cannot be forged."""
    address = request.client.host if request.client else "?"
    arrival = request.scope.get(guard.ARRIVAL)
    if arrival is None:  # not through guard.Proxies (a bare application)
        return _name(address)
    via = f" via {_name(arrival.proxy)}" if arrival.proxy and arrival.proxy != address else ""
    if arrival.user:
        return f"user {_name(arrival.user)} at {_name(address)}{via}"
    login = arrival.login()
    return f"login {_name(login)} at {_name(address)}{via}" if login else f"{_name(address)}{via}"


def _name(text: str) -> str:
    text = text[:128]
    return text if _PLAIN.fullmatch(text) else json.dumps(text)


_PLAIN = re.compile(r"[\w.@\\/+:-]{1,128}", re.ASCII)


def parse_time(text: str, what: str) -> datetime:
    """A date and time from a URL or form, in UTC; a Problem (400) naming ``what`` if it is none."""
    try:
        return db.utc(datetime.fromisoformat(text.strip().replace(" ", "T")))
    except ValueError:
        raise Problem(400, f"{what} must be a date and time such as 2026-01-31T12:00:00, "
                           f"not {text[:40]!r}") from None


def iso(value: datetime) -> str:
    return value.isoformat(timespec="microseconds")


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
