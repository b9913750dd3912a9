"""The recurring schedules, ``/schedules``: every schedule (dbo.QueueSchedule_V, docs/schedules.md)
with its cadence, misfire policy, next and last slot and whether it is paused; a schedule whose
next slot is more than LATE_S past the server's clock is marked late, since the schedulers
fire a due slot within about a second: no worker with its scheduler (nor an Agent job) is
running. Read only: schedules change through ``invoke schedule.*`` and their procedures."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from relq import schedules
from relq.dashboard import access
from relq.dashboard.store import ScheduleStore
from relq.dashboard.web import Dashboard

LATE_S = 60  # a due slot unfired this long: no scheduler runs (they tick about every second)


@dataclass(frozen=True)
class Shown:
    """One schedule as the page shows it."""

    row: dict[str, Any]
    cadence: str
    misfire: str
    late_s: int | None  # how long its due slot has waited, when more than LATE_S; None: not late

    @property
    def paused(self) -> bool:
        return self.row.get("PausedAt") is not None

    def at(self, column: str) -> str:
        """A time of the row to the second (slots are whole seconds), "" for none."""
        value = self.row.get(column)
        return "" if value is None else value.isoformat(sep=" ", timespec="seconds")


def look() -> access.Need:
    return access.Need("QueueMonitor", "the schedules", (("dbo.QueueSchedule_V", "SELECT"),))


def shown(now: datetime, rows: list[dict[str, Any]]) -> list[Shown]:
    """The rows as shown: a schedule not paused whose next slot is more than LATE_S before the
    server's ``now`` is late, by how long its slot has waited."""
    out = []
    for row in rows:
        waited = (now - row["NextSlotAt"]).total_seconds()
        late = int(waited) if row.get("PausedAt") is None and waited > LATE_S else None
        out.append(Shown(row, schedules.cadence_text(row), schedules.misfire_text(row), late))
    return out


def routes(dash: Dashboard) -> list[Route]:
    def page(request: Request) -> Response:
        dash.require(look())
        now, rows = cast(ScheduleStore, dash.store).schedules()
        listed = shown(now, rows)
        late = sum(1 for s in listed if s.late_s is not None)
        return dash.page(request, "schedules.html", schedules=listed, late=late, late_grace_s=LATE_S)

    return [Route("/schedules", page, name="schedules")]
