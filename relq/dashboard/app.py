"""The dashboard as a Starlette application over a :class:`Store`.

Each page area is a module with a ``routes(dash)`` function over the shared
:class:`~relq.dashboard.web.Dashboard`: overview.py (``/``, its live part, ``/metrics``),
items.py (a queue's items), item.py (an item and its controls), bulk.py (actions on many
items), stuck.py (the items in Processing and who holds them). A form carries the
dashboard's CSRF token and, for an item, its token (``UpdatedAt``); the database refuses a
stale one (735705)."""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount
from starlette.staticfiles import StaticFiles

from relq.dashboard import batches, bulk, deadletters, item, items, outage, overview, schedules, stuck
from relq.dashboard.chart import History
from relq.dashboard.guard import Guarded
from relq.dashboard.store import Store, outage_of
from relq.dashboard.web import HERE, Dashboard, Problem, Settings, unavailable
from relq.errors import RelqError

__all__ = ["Settings", "create_app"]


def create_app(store: Store, settings: Settings | None = None, history: History | None = None) -> Starlette:
    """The dashboard over ``store``."""
    settings = settings or Settings()
    dash = Dashboard(store, settings, history or History(every_s=max(settings.refresh_s, 1.0)))

    async def problem(request: Request, exc: Exception) -> Response:
        if isinstance(exc, Problem):
            status_code, line = exc.status, exc.line
        elif isinstance(exc, HTTPException):
            status_code, line = exc.status_code, exc.detail
        elif outage_of(exc):  # the database is away: the page says so, and when it last answered
            return outage.problem(dash, request, exc)
        else:  # a RelqError: the server refused
            status_code, line = 503, unavailable(exc)
        return dash.page(request, "problem.html", status_code=status_code, line=line)

    routes = [*overview.routes(dash), *items.routes(dash), *item.routes(dash), *bulk.routes(dash),
              *deadletters.routes(dash), *batches.routes(dash), *schedules.routes(dash), *stuck.routes(dash),
              Mount("/static", StaticFiles(directory=str(HERE / "static")), name="static")]
    handlers = {Problem: problem, RelqError: problem, HTTPException: problem}
    middleware = []
    if settings.allowed_hosts is not None:
        middleware.append(Middleware(TrustedHostMiddleware, allowed_hosts=settings.allowed_hosts))
    # guard.py: the security headers on every answer; forwarded headers and the user header
    # believed only from the proxies the operator names
    return Guarded(routes=routes, exception_handlers=handlers, middleware=middleware,
                   proxies=settings.trusted_proxies, header=settings.user_header, login=dash.login)
