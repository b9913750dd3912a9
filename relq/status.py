"""`invoke status`: the health of every queue, from the database's own health views
(dbo.QueueHealth_V, dbo.QueueThroughput_V), and its operating controls (dbo.QueueControl_V:
which queues and types are paused, by whom, when and why, and their limits), as tables in
the terminal or as JSON.
The figures are the views'; this module only arranges them, one row per queue.

Both views cost the same however much history a queue keeps: QueueHealth_V counts the
unfinished items only (from each queue's filtered health index), and what a queue
finished comes from QueueThroughput_V's last 15 minutes of attempts. So a queue's
``items`` holds the unfinished states; finished items are never counted here."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table

from relq import controls as queue_controls
from relq import db
from relq.controls import Control

HEALTH = "SELECT [Queue], [Status], Items, OldestDueSeconds, PastLease FROM dbo.QueueHealth_V;"
THROUGHPUT = ("SELECT [Queue], CompletedPerMinute, FailedPerMinute, RetriedPerMinute, DurationP50Ms, "
              "DurationP95Ms FROM dbo.QueueThroughput_V;")
# The states dbo.QueueHealth_V has a row for (dbo.QueueIsFinished_fn = 0), as the table shows them.
UNFINISHED = ("Pending", "Processing", "Error", "Paused")
# The finished states: no view counts them; a list of a queue's items can still show them.
FINISHED = ("Failed", "Completed", "Cancelled", "Terminated", "PartiallyCompleted")
STATES = UNFINISHED + FINISHED


@dataclass
class QueueHealth:
    queue: str
    items: dict[str, int] = field(default_factory=dict)  # per unfinished state
    oldest_due_s: int | None = None  # the longest a due item has waited (Pending or Error)
    past_lease: int = 0
    completed_per_min: float = 0.0
    failed_per_min: float = 0.0
    retried_per_min: float = 0.0
    p50_ms: int | None = None
    p95_ms: int | None = None
    paused: bool = False  # the queue itself is paused: its claims take nothing
    group_limit: int = 1  # at most this many items of one GroupKey in Processing
    # Every job type: whether claims take nothing of it (it or its queue is paused).
    type_paused: dict[str, bool] = field(default_factory=dict)
    type_limits: dict[str, int] = field(default_factory=dict)  # the limited types' limits
    # What is set on the queue or its types: pauses (who, when, why) and limits.
    controls: list[dict[str, Any]] = field(default_factory=list)


def summarize(health: Iterable[tuple], throughput: Iterable[tuple],
              control_rows: Iterable[Control] = ()) -> list[QueueHealth]:
    """One QueueHealth per queue, in name order, from the views' rows."""
    queues: dict[str, QueueHealth] = {}
    for queue, status, items, oldest, past_lease in health:
        q = queues.setdefault(queue, QueueHealth(queue))
        q.items[status] = int(items)
        if oldest is not None:
            q.oldest_due_s = max(int(oldest), q.oldest_due_s or 0)
        q.past_lease += int(past_lease)
    for queue, completed, failed, retried, p50, p95 in throughput:
        q = queues.setdefault(queue, QueueHealth(queue))
        q.completed_per_min, q.failed_per_min, q.retried_per_min = (
            float(completed), float(failed), float(retried))
        q.p50_ms = None if p50 is None else int(p50)
        q.p95_ms = None if p95 is None else int(p95)
    for control in control_rows:
        q = queues.setdefault(control.queue, QueueHealth(control.queue))
        if control.type is None:
            q.paused, q.group_limit = control.is_paused, control.group_limit or 1
        else:
            q.type_paused[control.type] = control.claims_paused
            if control.type_limit is not None:
                q.type_limits[control.type] = control.type_limit
        if control.notable:
            q.controls.append(_control(control))
    return [queues[name] for name in sorted(queues)]


def _control(control: Control) -> dict[str, Any]:
    return {"target": control.target, "paused": control.is_paused, "paused_by": control.paused_by,
            "paused_at": control.paused_at.isoformat() if control.paused_at else None,
            "reason": control.pause_reason, "type_limit": control.type_limit,
            "group_limit": control.group_limit if control.type is None else None,
            "processing": control.processing}


def read(conn: Any) -> list[QueueHealth]:
    cursor = conn.cursor()
    try:
        return summarize(db.query(cursor, HEALTH), db.query(cursor, THROUGHPUT),
                         queue_controls.controls(db.query(cursor, queue_controls.CONTROLS)))
    finally:
        cursor.close()


def table(queues: list[QueueHealth]) -> Table:
    grid = Table(title="relq queues",
                 caption="unfinished items now; per minute and durations: the last 15 minutes")
    for column in ("queue", *(s.lower() for s in UNFINISHED), "oldest due", "past lease",
                   "done/min", "failed/min", "p50 ms", "p95 ms"):
        grid.add_column(column, justify="left" if column == "queue" else "right")
    for q in queues:
        grid.add_row(
            f"{q.queue} (paused)" if q.paused else q.queue, *(str(q.items.get(s, 0)) for s in UNFINISHED),
            age(q.oldest_due_s), str(q.past_lease),
            f"{q.completed_per_min:.1f}", f"{q.failed_per_min:.1f}",
            _ms(q.p50_ms), _ms(q.p95_ms),
            style="red" if q.past_lease or (q.oldest_due_s or 0) > 300 else None,
        )
    return grid


def controls_table(queues: list[QueueHealth]) -> Table | None:
    """The paused queues and types and the limits, one row each; None when nothing is set."""
    rows = [c for q in queues for c in q.controls]
    if not rows:
        return None
    grid = Table(title="controls", caption="invoke pause / resume / limit change them")
    for column in ("queue or type", "paused", "by", "since (UTC)", "why", "limit", "processing"):
        grid.add_column(column, justify="right" if column == "processing" else "left")
    for c in rows:
        limit = (f"{c['type_limit']} at once" if c["type_limit"] is not None else
                 f"{c['group_limit']} per group" if c["group_limit"] else "-")
        grid.add_row(c["target"], "yes" if c["paused"] else "no", c["paused_by"] or "-",
                     (c["paused_at"] or "-")[:16].replace("T", " "), c["reason"] or "-", limit,
                     str(c["processing"]), style="yellow" if c["paused"] else None)
    return grid


def view(queues: list[QueueHealth]) -> Table | Group:
    """What the terminal shows: the health table, and the controls' when any is set."""
    extra = controls_table(queues)
    return table(queues) if extra is None else Group(table(queues), extra)


def as_json(queues: list[QueueHealth]) -> str:
    return json.dumps([asdict(q) for q in queues], indent=2)


def watch(conn: Any, every_s: float, console: Console) -> None:
    """Refresh the table every ``every_s`` seconds until Ctrl-C."""
    with Live(view(read(conn)), console=console, refresh_per_second=4) as live:
        try:
            while True:
                time.sleep(every_s)
                live.update(view(read(conn)))
        except KeyboardInterrupt:
            return


def age(seconds: int | None) -> str:
    """How long ago, as status and the dashboard show it: 42s, 3m07s, 2h05m; - for none."""
    if seconds is None:
        return "-"
    minutes, s = divmod(int(seconds), 60)
    hours, m = divmod(minutes, 60)
    return f"{hours}h{m:02d}m" if hours else f"{m}m{s:02d}s" if m else f"{s}s"


def _ms(value: int | None) -> str:
    return "-" if value is None else str(value)
