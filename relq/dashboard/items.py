"""A queue's items, ``/queues/<queue>``: filtered, and paged by key (never OFFSET)."""

from __future__ import annotations

from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from relq.dashboard import access, bulk
from relq.dashboard.store import LISTED, Filter
from relq.dashboard.web import Dashboard, iso, parse_time
from relq.status import STATES

PAGE = 50  # items per page


def routes(dash: Dashboard) -> list[Route]:
    def items(request: Request) -> Response:
        queue = dash.known(request.path_params["queue"]).queue
        dash.require(access.browse(queue))
        where = list_filter(request)
        rows = dash.store.items(queue, where, PAGE + 1)  # one more than shown: is there a next page?
        next_url = query(request, after=iso(rows[PAGE - 1]["EnqueuedAt"])) if len(rows) > PAGE else None
        rows = rows[:PAGE]
        return dash.page(request, "items.html", queue=queue, rows=rows, where=where, listed=LISTED,
                         next_url=next_url, first_url=query(request, after=None), statuses=list(STATES),
                         retried=bulk.result(request), act_problem=dash.act_problem(queue))

    return [Route("/queues/{queue}", items, name="items")]


def list_filter(request: Request) -> Filter:
    """The Filter a list's query string describes."""
    q = request.query_params
    after = q.get("after")
    return Filter(status=q.get("status") or None, type=q.get("type") or None, error=q.get("error") or None,
                  newest_first=q.get("order", "newest") != "oldest",
                  after=parse_time(after, "after") if after else None)


def query(request: Request, **changes: str | None) -> str:
    """This list's URL with ``changes`` to its query (None drops a parameter)."""
    params = {k: v for k, v in request.query_params.items() if k not in bulk.RESULT}
    params.update(changes)
    kept = {k: v for k, v in params.items() if v}
    return f"{request.url.path}?{urlencode(kept)}" if kept else request.url.path
