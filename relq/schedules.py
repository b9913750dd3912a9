"""``invoke schedule.add``, ``.list``, ``.pause``, ``.resume`` and ``.remove``: the recurring
schedules (dbo.QueueSchedule) through their procedures. What Python can check is checked
before anything is sent (the cron expression with cronsim, the numbers' ranges, the payload's
JSON), each problem one line naming what is wrong; the procedures check the rest (the queue,
the type, a name taken: their error's one line)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from rich.table import Table

from relq import db
from relq.cadence import Cadence, check_catch_up, check_cron, check_interval, first_slot, resumed_slot
from relq.errors import RelqError

COLUMNS = ("Name", "Queue", "Type", "Cadence", "Misfire", "NextSlotAt", "LastSlotAt", "Paused")
LIST_SQL = (
    "SELECT v.[Name], v.[Queue], v.[Type], v.Payload, v.EntityKey, v.[Priority], v.GroupKey, v.CronExpr, "
    "v.IntervalSeconds, v.Misfire, v.CatchUpMax, v.NextSlotAt, v.LastSlotAt, v.LastEnqueuedAt, v.PausedAt, "
    "v.PausedBy, v.CreatedAt, v.CreatedBy FROM dbo.QueueSchedule_V AS v ORDER BY v.[Name];"
)
NOW_SQL = "SELECT SYSUTCDATETIME();"
ONE_SQL = ("SELECT v.CronExpr, v.IntervalSeconds, v.NextSlotAt FROM dbo.QueueSchedule_V AS v "
           "WHERE v.[Name] = ?;")


@dataclass(frozen=True)
class NewSchedule:
    """What ``schedule.add`` sends, checked."""

    name: str
    queue: str
    type: str
    cadence: Cadence
    payload: str | None = None
    entity_key: str | None = None
    priority: int | None = None
    group_key: str | None = None
    catch_up: int | None = None  # None: Skip

    def params(self, next_slot_at: datetime | None) -> dict[str, Any]:
        return {"Name": self.name, "Queue": self.queue, "Type": self.type, "Payload": self.payload,
                "EntityKey": self.entity_key, "Priority": self.priority, "GroupKey": self.group_key,
                "CronExpr": self.cadence.cron, "IntervalSeconds": self.cadence.interval_s,
                "Misfire": "Skip" if self.catch_up is None else "CatchUp", "CatchUpMax": self.catch_up,
                "NextSlotAt": next_slot_at}


def new_schedule(name: str | None, queue: str | None, type: str | None, *, cron: str | None = None,
                 every: int | None = None, payload: str | None = None, entity_key: str | None = None,
                 priority: int | None = None, group_key: str | None = None,
                 catch_up: int | None = None) -> NewSchedule:
    """The options of ``schedule.add`` checked, the first problem one RelqError line."""
    for option, value in (("name", name), ("queue", queue), ("type", type)):
        if not value or not value.strip():
            raise RelqError(f"--{option} is required")
    if (cron is None) == (every is None):
        raise RelqError("give either --cron or --every (seconds), not both or neither")
    if cron is not None:
        cadence = Cadence(cron=check_cron(cron))
    else:
        cadence = Cadence(interval_s=check_interval(every))  # type: ignore[arg-type]
    if payload is not None:
        try:
            json.loads(payload)
        except ValueError as exc:
            raise RelqError(f"--payload is not valid JSON: {exc}") from None
    if priority is not None and not -32768 <= priority <= 32767:
        raise RelqError(f"--priority must be -32768 to 32767, not {priority}")
    assert name and queue and type
    return NewSchedule(name.strip(), queue.strip(), type.strip(), cadence, payload, entity_key, priority,
                       group_key, check_catch_up(catch_up))


def _now(conn: Any) -> datetime:
    """The server's time: slots are the database's, whatever this machine's clock says."""
    cursor = conn.cursor()
    try:
        return db.query(cursor, NOW_SQL)[0][0]
    finally:
        cursor.close()


def add(conn: Any, schedule: NewSchedule) -> dict[str, Any]:
    first = first_slot(schedule.cadence, _now(conn))
    result = db.call(conn, "dbo.Add_QueueSchedule_trx", **schedule.params(first))
    return dict(zip(result.columns[0], result.result_sets[0][0], strict=True))


def read(conn: Any) -> list[dict[str, Any]]:
    cursor = conn.cursor()
    try:
        cursor_sets, columns = db.result_sets(cursor, LIST_SQL, context="dbo.QueueSchedule_V")
    finally:
        cursor.close()
    return [dict(zip(columns[0], row, strict=True)) for row in cursor_sets[0]] if columns else []


def pause(conn: Any, name: str) -> dict[str, Any]:
    result = db.call(conn, "dbo.Pause_QueueSchedule_trx", Name=name)
    return dict(zip(result.columns[0], result.result_sets[0][0], strict=True))


def resume(conn: Any, name: str) -> dict[str, Any]:
    """Resume from the first slot from now on: the paused time's slots are not enqueued."""
    cursor = conn.cursor()
    try:
        rows = db.query(cursor, ONE_SQL, name)
    finally:
        cursor.close()
    next_slot = None
    if rows:
        cron, interval, next_slot_at = rows[0]
        next_slot = resumed_slot(Cadence(cron, interval), next_slot_at, _now(conn))
    # no row: the procedure says so (735720), in its words
    result = db.call(conn, "dbo.Resume_QueueSchedule_trx", Name=name, NextSlotAt=next_slot)
    return dict(zip(result.columns[0], result.result_sets[0][0], strict=True))


def remove(conn: Any, name: str) -> None:
    db.call(conn, "dbo.Delete_QueueSchedule_trx", Name=name)


def cadence_text(row: dict[str, Any]) -> str:
    return f"cron {row['CronExpr']}" if row.get("CronExpr") else f"every {row['IntervalSeconds']} s"


def misfire_text(row: dict[str, Any]) -> str:
    return "skip" if row.get("Misfire") == "Skip" else f"catch up {row.get('CatchUpMax')}"


def _time(value: datetime | None) -> str:
    return "-" if value is None else value.isoformat(sep=" ", timespec="seconds")


def table(rows: list[dict[str, Any]]) -> Table:
    out = Table(title="relq schedules (UTC)")
    for column in COLUMNS:
        out.add_column(column)
    for row in rows:
        paused = "-" if row.get("PausedAt") is None else f"{_time(row['PausedAt'])} by {row.get('PausedBy')}"
        out.add_row(row["Name"], row["Queue"], row["Type"], cadence_text(row), misfire_text(row),
                    _time(row["NextSlotAt"]), _time(row.get("LastSlotAt")), paused)
    return out


def as_json(rows: list[dict[str, Any]]) -> str:
    return json.dumps(rows, default=lambda v: v.isoformat() if isinstance(v, datetime) else str(v), indent=2)


def summary(action: str, row: dict[str, Any]) -> str:
    """One line for an action done."""
    return (f"schedule {row['Name']} {action}: {row['Queue']} {row['Type']}, {cadence_text(row)}, "
            f"{misfire_text(row)}, next slot {_time(row['NextSlotAt'])} UTC"
            + (" (paused)" if row.get("PausedAt") is not None else ""))
