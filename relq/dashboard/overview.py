"""The overview: every queue's health, ``/`` and its live part ``/overview`` (which the
page's script fetches every few seconds), ``/metrics`` for Prometheus, and, with actions
allowed, ``POST /queues/<queue>/controls/<Pause|Resume>``: a queue or one of its job types
paused (with a reason) or resumed through dbo.Pause_Queue_trx / dbo.Resume_Queue_trx, for a
login with QueueAdmin, each audited as the item controls are (item.py): one log line naming
who acted and where from, and the person (a trusted proxy's user, else the login) recorded
as PausedBy or ResumedBy."""

from __future__ import annotations

from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from relq import db
from relq.dashboard import access, guard, metrics, outage
from relq.dashboard.store import QUEUE_ACTIONS, CallLost, Unreachable, outage_of
from relq.dashboard.web import Dashboard, Problem, client, log, unavailable
from relq.errors import Msg, RelqError

# What a refusal of a queue control means to the person who clicked (docs/errors.md).
REFUSALS = {
    Msg.UnknownQueue: "no such queue or job type (any more)",
    Msg.ControlReason: "a pause needs its reason, 1 to 400 characters",
    229: "this login may not do that: pausing needs the role QueueAdmin",
}


def routes(dash: Dashboard) -> list[Route]:
    counters = metrics.Counters()  # /metrics' counters: this application's, from its first scrape on

    def can_pause() -> tuple[bool, str | None]:
        """Whether the overview offers Pause and Resume, and if not for a missing role, why."""
        if not dash.settings.allow_actions:
            return False, None
        try:
            line = access.missing(dash.store, access.pause())
        except RelqError:
            return False, None  # the database is away: the page says so
        return line is None, line

    def overview(request: Request, status_code: int = 200, **context: Any) -> Response:
        offered, pause_problem = can_pause()
        done, target = request.query_params.get("done"), request.query_params.get("target", "")
        if done in QUEUE_ACTIONS and "message" not in context:
            context["message"] = f"{done} of {target}: done." if target else f"{done}: done."
        return outage.overview(dash, request, "overview.html", status_code=status_code, can_pause=offered,
                               pause_problem=pause_problem, **context)

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

    async def control(request: Request) -> Response:
        form = await request.form()
        dash.check_form(form)
        return await run_in_threadpool(_control, request, form)

    def _control(request: Request, form: Any) -> Response:
        queue, action = request.path_params["queue"], request.path_params["action"]
        if action not in QUEUE_ACTIONS:
            raise Problem(404, f"no queue control {action!r} (controls: {', '.join(QUEUE_ACTIONS)})")
        type_ = str(form.get("type", "")).strip() or None
        reason = str(form.get("reason", "")).strip()
        target = queue if type_ is None else f"{queue}.{type_}"
        try:
            dash.known(queue)
            dash.require(access.pause())
        except RelqError as exc:
            if not outage_of(exc):
                raise
            return not_run(request, action, target, exc)
        if action == "Pause" and not reason:
            return overview(request, status_code=400, refusal=f"Pause of {target}: give the reason, which "
                                                              "is shown with the pause.")
        arrival = request.scope.get(guard.ARRIVAL)
        person = arrival.user if arrival is not None and arrival.user else None  # None: the login
        try:
            dash.store.control(action, queue, type_, reason if action == "Pause" else None, person)
        except Unreachable as exc:
            return not_run(request, action, target, exc)
        except CallLost as exc:
            log.warning("dashboard: %s %s by %s: may or may not have run, %s", action, target,
                        client(request), exc)
            return outage.problem(dash, request, exc, f"{action} of {target} may or may not have run: the "
                                                      "connection broke before its answer came. Look at the "
                                                      "overview before you act again.")
        except db.SqlError as exc:
            log.info("dashboard: %s %s by %s: refused, %s", action, target, client(request), exc)
            why = REFUSALS.get(exc.number or 0, str(exc))
            return overview(request, status_code=400, refusal=f"{action} of {target} refused: {why}.")
        log.info("dashboard: %s %s by %s: done%s", action, target, client(request),
                 f", because {reason!r}" if action == "Pause" else "")
        url = request.url_for("overview").include_query_params(done=action, target=target)
        return RedirectResponse(str(url), status_code=303)

    def not_run(request: Request, action: str, target: str, exc: RelqError) -> Response:
        log.warning("dashboard: %s %s by %s: did not run, the database is away (%s)", action, target,
                    client(request), exc)
        return outage.problem(dash, request, exc, f"{action} of {target} did not run: the dashboard cannot "
                                                  "reach the database, so nothing was sent. Try again once "
                                                  "it answers.")

    return [
        Route("/", overview, name="overview"),
        Route("/overview", overview_part, name="overview_part"),
        Route("/metrics", metrics_text, name="metrics"),
        Route("/queues/{queue}/controls/{action}", control, methods=["POST"], name="queue_control"),
    ]
