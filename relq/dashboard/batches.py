"""The batches, ``/batches``: every batch still running (its callback not enqueued yet) and
the newest ones, newest first, each with its progress: how many of its items finished in
each final state, how many are left, and when its callback was enqueued (dbo.QueueBatch_V;
docs/batches.md). Read only: a batch changes by its items' reports alone."""

from __future__ import annotations

from typing import cast

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from relq import batches
from relq.dashboard import access
from relq.dashboard.store import BatchStore
from relq.dashboard.web import Dashboard

SHOWN = 50  # the newest batches listed (and at most as many running ones)


def look() -> access.Need:
    return access.Need("QueueMonitor", "the batches", (("dbo.QueueBatch_V", "SELECT"),))


def read(store: BatchStore) -> list[batches.Batch]:
    rows = store.batches(SHOWN)
    return batches.rows_to_batches([tuple(r[c] for c in batches.COLUMNS) for r in rows])


def routes(dash: Dashboard) -> list[Route]:
    def page(request: Request) -> Response:
        dash.require(look())
        shown = read(cast(BatchStore, dash.store))
        running = sum(1 for b in shown if b.state != "Finished")
        return dash.page(request, "batches.html", batches=shown, running=running, shown_limit=SHOWN)

    return [Route("/batches", page, name="batches")]
