"""Actions on many items: ``POST /queues/<queue>/retry-failed`` retries every Failed item
of a type, one control call per item, each with the token it was read with; the ones
that changed meanwhile are counted, not forced."""

from __future__ import annotations

from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from relq import db
from relq.dashboard import access
from relq.dashboard.store import Filter
from relq.dashboard.web import Dashboard, Problem, client, log
from relq.errors import Msg

RESULT = ("retried", "stale", "refused")  # the counts a bulk action's redirect carries


def routes(dash: Dashboard) -> list[Route]:
    async def retry_failed(request: Request) -> Response:
        form = await request.form()
        dash.check_form(form)
        return await run_in_threadpool(_retry_failed, request, form)

    def _retry_failed(request: Request, form: Any) -> Response:
        queue = request.path_params["queue"]
        dash.known(queue)
        dash.require(access.browse(queue))
        dash.require(access.act(queue))
        job_type = str(form.get("type", "")).strip()
        if not job_type:
            raise Problem(400, "retrying Failed items: choose a type")
        counts = {"retried": 0, "stale": 0, "refused": 0}
        after = None
        while True:
            rows = dash.store.items(queue, Filter("Failed", job_type, None, False, after), 500)
            for row in rows:
                try:
                    dash.store.act(queue, "Retry", row["EnqueuedAt"], row["UpdatedAt"])
                    counts["retried"] += 1
                except db.SqlError as exc:
                    counts["stale" if exc.number == Msg.StaleToken else "refused"] += 1
            if len(rows) < 500:
                break
            after = rows[-1]["EnqueuedAt"]
        log.info("dashboard: Retry %s Failed %s items by %s: %d retried, %d changed since read, %d refused",
                 queue, job_type, client(request), counts["retried"], counts["stale"], counts["refused"])
        url = request.url_for("items", queue=queue).include_query_params(status="Failed", type=job_type,
                                                                         **counts)
        return RedirectResponse(str(url), status_code=303)

    return [Route("/queues/{queue}/retry-failed", retry_failed, methods=["POST"], name="retry_failed")]


def result(request: Request) -> dict[str, int] | None:
    """The counts a bulk action's redirect carries, to show on the list it returns to."""
    q = request.query_params
    if "retried" not in q:
        return None
    try:
        return {k: int(q.get(k, "0")) for k in RESULT}
    except ValueError:
        return None
