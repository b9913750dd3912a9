"""An item, ``/queues/<queue>/items/<key>``: its worker view's columns and its attempts;
with actions allowed, ``POST`` to one of its controls (dbo.<Action>_<Queue>_trx)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from relq import db
from relq.dashboard import access, outage, privacy
from relq.dashboard.store import ACTIONS, CallLost, Column, Unreachable, outage_of
from relq.dashboard.web import Dashboard, Problem, Settings, client, iso, log, parse_time
from relq.errors import Msg, RelqError

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


def routes(dash: Dashboard) -> list[Route]:
    def item(request: Request, message: str | None = None, status_code: int = 200,
             alert: str | None = None, refusal: str | None = None) -> Response:
        """The item's page; ``message``: what was done (the green box), ``refusal``: what was
        not done, and why (a box of its own, role=alert: a stale token, any 4xx of an action)."""
        queue = dash.known(request.path_params["queue"]).queue
        dash.require(access.browse(queue))
        key = parse_time(request.path_params["key"], "the item's key")
        columns = [c for c in dash.store.columns(queue) if not privacy.is_secret(c)]
        found = dash.store.item(queue, key, [c.name for c in columns])
        if found is None:
            raise Problem(404, f"no {queue} item has the key {iso(key)} (purged or archived?)")
        done = request.query_params.get("done")
        if message is None and done in ACTIONS:
            message = f"{done}: done."
        cannot_act = dash.act_problem(queue)
        allowed = dash.settings.allow_actions and not cannot_act
        offered = OFFERED.get(found["Status"], ()) if allowed else ()
        return dash.page(request, "item.html", status_code=status_code, queue=queue, key=key,
                         fields=[(c, _shown(c, found.get(c.name), dash.settings)) for c in columns],
                         item=found, attempts=dash.store.attempts(queue, key), message=message,
                         offered=offered, act_problem=cannot_act, alert=alert, refusal=refusal)

    async def control(request: Request) -> Response:
        form = await request.form()
        dash.check_form(form)
        return await run_in_threadpool(_control, request, form)

    def _control(request: Request, form: Any) -> Response:
        queue, action = request.path_params["queue"], request.path_params["action"]
        if action not in ACTIONS:
            raise Problem(404, f"no control {action!r} (controls: {', '.join(ACTIONS)})")
        try:
            dash.known(queue)
            dash.require(access.act(queue))
        except RelqError as exc:
            if not outage_of(exc):
                raise
            return not_run(request, action, queue, request.path_params["key"], exc)
        key = parse_time(request.path_params["key"], "the item's key")
        token = parse_time(str(form.get("token", "")), "the item's token")
        when = str(form.get("scheduled_for", "")).strip()
        scheduled_for = parse_time(when, "the new due time") if when else None
        if action == "Reschedule" and scheduled_for is None:
            return item(request, refusal="Reschedule: give the new due time (UTC).", status_code=400)
        try:
            after = dash.store.act(queue, action, key, token, scheduled_for)
        except Unreachable as exc:
            return not_run(request, action, queue, iso(key), exc)
        except CallLost as exc:
            return lost(request, action, queue, key, exc)
        except db.SqlError as exc:
            log.info("dashboard: %s %s %s by %s: refused, %s", action, queue, iso(key), client(request), exc)
            reason = REFUSALS.get(exc.number or 0, str(exc))
            return item(request, refusal=f"{action} refused: {reason}.",
                        status_code=409 if exc.number == Msg.StaleToken else 400)
        log.info("dashboard: %s %s %s by %s: done, now %s", action, queue, iso(key), client(request),
                 after.get("Status"))
        url = request.url_for("item", queue=queue, key=iso(key)).include_query_params(done=action)
        return RedirectResponse(str(url), status_code=303)

    # -- an action the database's absence stopped (outage.py): whether it ran, said plainly --

    def not_run(request: Request, action: str, queue: str, key: str, exc: RelqError) -> Response:
        log.warning("dashboard: %s %s %s by %s: did not run, the database is away (%s)", action, queue, key,
                    client(request), exc)
        return outage.problem(dash, request, exc, f"{action} did not run: the dashboard cannot reach the "
                                                  "database, so nothing was sent. Try again once it answers.")

    def lost(request: Request, action: str, queue: str, key: datetime, exc: CallLost) -> Response:
        log.warning("dashboard: %s %s %s by %s: may or may not have run, %s", action, queue, iso(key),
                    client(request), exc)
        said = (f"{action} may or may not have run: the connection to the database broke before its answer "
                "came, and a change commits before its answer is sent.")
        try:  # read on a new connection: the item as it is now says what happened
            return item(request, status_code=503, alert=f"{said} Here is the item as it is now: look at its "
                                                        "status and attempts before you act again.")
        except RelqError as again:
            if not outage_of(again):
                raise
            return outage.problem(dash, request, again, f"{said} The item cannot be read now either: "
                                                        "look at it once the database answers, before you "
                                                        "act again.")

    return [
        Route("/queues/{queue}/items/{key}", item, name="item"),
        Route("/queues/{queue}/items/{key}/{action}", control, methods=["POST"], name="control"),
    ]


def _shown(column: Column, value: Any, settings: Settings) -> Any:
    if value is not None and privacy.is_personal(column) and not settings.show_personal_data:
        return privacy.mask(value)
    return value
