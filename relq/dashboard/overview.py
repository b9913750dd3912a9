"""The overview: every queue's health, ``/`` and its live part ``/overview`` (which the
page's script fetches every few seconds), and ``/metrics`` for Prometheus."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from relq.dashboard import access, metrics, outage
from relq.dashboard.web import Dashboard, unavailable
from relq.errors import RelqError


def routes(dash: Dashboard) -> list[Route]:
    counters = metrics.Counters()  # /metrics' counters: this application's, from its first scrape on

    def overview(request: Request) -> Response:
        return outage.overview(dash, request, "overview.html")

    def overview_part(request: Request) -> Response:
        return outage.overview(dash, request, "_overview.html")

    def metrics_text(request: Request) -> Response:
        try:
            line = access.missing(dash.store, access.scrape())
            if line:
                return PlainTextResponse(line + "\n", status_code=403)
            queues = dash.store.health()
            counters.scrape(dash.store)
        except RelqError as exc:
            return PlainTextResponse(f"{unavailable(exc)}\n", status_code=503)
        dash.history.add(dash.settings.clock(), queues)
        return Response(metrics.exposition(queues, counters.totals()), media_type=metrics.CONTENT_TYPE)

    return [
        Route("/", overview, name="overview"),
        Route("/overview", overview_part, name="overview_part"),
        Route("/metrics", metrics_text, name="metrics"),
    ]
