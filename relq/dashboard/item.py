"""An item, ``/queues/<queue>/items/<key>``: its worker view's columns and its attempts;
with actions allowed, ``POST`` to one of its controls (dbo.<Action>_<Queue>_trx)."""

from __future__ import annotations

from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from relq import db
from relq.dashboard import access, privacy
from relq.dashboard.store import ACTIONS, Column
from relq.dashboard.web import Dashboard, Problem, Settings, client, iso, log, parse_time
from relq.errors import Msg

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
    def item(request: Request, message: str | None = None, status_code: int = 200) -> Response:
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
                         offered=offered, act_problem=cannot_act)

    async def control(request: Request) -> Response:
        form = await request.form()
        dash.check_form(form)
        return await run_in_threadpool(_control, request, form)

    def _control(request: Request, form: Any) -> Response:
        queue, action = request.path_params["queue"], request.path_params["action"]
        if action not in ACTIONS:
            raise Problem(404, f"no control {action!r} (controls: {', '.join(ACTIONS)})")
        dash.known(queue)
        dash.require(access.act(queue))
        key = parse_time(request.path_params["key"], "the item's key")
        token = parse_time(str(form.get("token", "")), "the item's token")
        when = str(form.get("scheduled_for", "")).strip()
        scheduled_for = parse_time(when, "the new due time") if when else None
        if action == "Reschedule" and scheduled_for is None:
            return item(request, "Reschedule: give the new due time (UTC).", 400)
        try:
            after = dash.store.act(queue, action, key, token, scheduled_for)
        except db.SqlError as exc:
            log.info("dashboard: %s %s %s by %s: refused, %s", action, queue, iso(key), client(request), exc)
            reason = REFUSALS.get(exc.number or 0, str(exc))
            return item(request, f"{action} refused: {reason}.", 409 if exc.number == Msg.StaleToken else 400)
        log.info("dashboard: %s %s %s by %s: done, now %s", action, queue, iso(key), client(request),
                 after.get("Status"))
        url = request.url_for("item", queue=queue, key=iso(key)).include_query_params(done=action)
        return RedirectResponse(str(url), status_code=303)

    return [
        Route("/queues/{queue}/items/{key}", item, name="item"),
        Route("/queues/{queue}/items/{key}/{action}", control, methods=["POST"], name="control"),
    ]


def _shown(column: Column, value: Any, settings: Settings) -> Any:
    if value is not None and privacy.is_personal(column) and not settings.show_personal_data:
        return privacy.mask(value)
    return value
