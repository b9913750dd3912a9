"""The operating controls of the relational queues: a queue or one of its job types paused
(claims take nothing of it) and the concurrency limits (of a type's items in Processing, of
one group's), as dbo.QueueControl_V shows them, and the calls that change them:
dbo.Pause_Queue_trx, dbo.Resume_Queue_trx and dbo.Limit_Queue_trx. `invoke status`, the
`invoke pause`, `resume` and `limit` tasks, the dashboard and /metrics use this module."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from relq import db
from relq.errors import RelqError

CONTROLS = ("SELECT [Queue], [Type], IsPaused, ClaimsPaused, PausedBy, PausedAt, PauseReason, ResumedBy, "
            "ResumedAt, TypeLimit, GroupLimit, LimitSetBy, LimitSetAt, Processing FROM dbo.QueueControl_V;")
REASON_MAX = 400  # dbo.QueueControl.PauseReason
LIMIT_MAX = 32767  # a SMALLINT


@dataclass(frozen=True)
class Control:
    """One row of dbo.QueueControl_V: a queue (``type`` None) or one of its job types."""

    queue: str
    type: str | None
    is_paused: bool
    claims_paused: bool  # it or its queue is paused
    paused_by: str | None = None
    paused_at: datetime | None = None
    pause_reason: str | None = None
    resumed_by: str | None = None
    resumed_at: datetime | None = None
    type_limit: int | None = None
    group_limit: int | None = None
    limit_set_by: str | None = None
    limit_set_at: datetime | None = None
    processing: int = 0  # items in Processing, a lease that ran out or not: the slots they hold

    @property
    def target(self) -> str:
        """``SyncQueue`` or ``SyncQueue.CustomerSync``, as the tasks take it."""
        return self.queue if self.type is None else f"{self.queue}.{self.type}"

    @property
    def notable(self) -> bool:
        """Whether anything is set: a pause, a type limit, or a group limit other than 1."""
        return self.is_paused or self.type_limit is not None or (self.group_limit or 1) != 1

    @property
    def pause_line(self) -> str:
        """Who paused it, when and why, in one line; '' when it is not paused."""
        if not self.is_paused:
            return ""
        when = f" at {self.paused_at:%Y-%m-%d %H:%M} UTC" if self.paused_at else ""
        return f"paused by {self.paused_by}{when}: {self.pause_reason}"

    @property
    def limit_line(self) -> str:
        """The limit in one line ('' for none): ``2 of 3 slots`` or ``4 per group``."""
        if self.type_limit is not None:
            return f"{self.processing} of {self.type_limit} slots"
        if self.type is None and (self.group_limit or 1) != 1:
            return f"{self.group_limit} per group"
        return ""


def controls(rows: Iterable[tuple]) -> list[Control]:
    """The view's rows as Controls, each queue's own row first, then its types by name."""
    found = [Control(queue, type_, bool(paused), bool(claims_paused), paused_by, paused_at, reason,
                     resumed_by, resumed_at, None if type_limit is None else int(type_limit),
                     None if group_limit is None else int(group_limit), set_by, set_at, int(processing or 0))
             for (queue, type_, paused, claims_paused, paused_by, paused_at, reason, resumed_by, resumed_at,
                  type_limit, group_limit, set_by, set_at, processing) in rows]
    return sorted(found, key=lambda c: (c.queue, c.type is not None, c.type or ""))


def read(conn: Any) -> list[Control]:
    cursor = conn.cursor()
    try:
        return controls(db.query(cursor, CONTROLS))
    finally:
        cursor.close()


def split_target(target: str) -> tuple[str, str | None]:
    """``SyncQueue`` -> (SyncQueue, None); ``SyncQueue.CustomerSync`` -> (SyncQueue, CustomerSync)."""
    queue, dot, type_ = (target or "").strip().partition(".")
    if not queue or (dot and not type_):
        raise RelqError(f"{target!r} is not a queue or queue.Type (e.g. SyncQueue or SyncQueue.CustomerSync)")
    return queue, type_ or None


def check_reason(reason: str | None) -> str:
    """The pause's reason, refused in one line before any call when blank or too long (the
    procedure refuses it too: 735718)."""
    text = (reason or "").strip()
    if not text:
        raise RelqError("a pause needs a reason: --reason 'why' (it is shown with the pause)")
    if len(text) > REASON_MAX:
        raise RelqError(f"the reason is {len(text)} characters; at most {REASON_MAX}")
    return text


def check_limit(limit: int | None) -> int | None:
    """A limit from 1 to 32767, or None for none (the procedure refuses others too: 735719)."""
    if limit is not None and not 1 <= limit <= LIMIT_MAX:
        raise RelqError(f"a limit is 1 to {LIMIT_MAX}, not {limit} (use --none to remove one)")
    return limit


def _row(result: db.CallResult) -> dict[str, Any]:
    if not result.result_sets or not result.result_sets[0]:
        return {}
    return dict(zip(result.columns[0], result.result_sets[0][0], strict=True))


def pause(conn: Any, queue: str, type_: str | None, reason: str, by: str | None = None) -> dict[str, Any]:
    """Pause the queue (``type_`` None) or the type; ``by`` None: the login. The row written."""
    return _row(db.call(conn, "dbo.Pause_Queue_trx", Queue=queue, Type=type_,
                        PauseReason=check_reason(reason), PausedBy=by))


def resume(conn: Any, queue: str, type_: str | None, by: str | None = None) -> dict[str, Any]:
    """Resume the queue or the type; the row ({} when it was never paused nor limited)."""
    return _row(db.call(conn, "dbo.Resume_Queue_trx", Queue=queue, Type=type_, ResumedBy=by))


def limit(conn: Any, queue: str, type_: str | None, value: int | None,
          by: str | None = None) -> dict[str, Any]:
    """Set the type's limit (``type_`` given) or the queue's group limit; ``value`` None removes it."""
    return _row(db.call(conn, "dbo.Limit_Queue_trx", Queue=queue, Type=type_, Limit=check_limit(value),
                        LimitSetBy=by))


def done_line(action: str, target: str, row: dict[str, Any]) -> str:
    """What a task prints once the procedure answered."""
    if action == "pause":
        return f"paused {target} (by {row.get('PausedBy')}): {row.get('PauseReason')}"
    if action == "resume":
        return f"resumed {target}" + (f" (by {row['ResumedBy']})" if row.get("ResumedBy") else
                                      " (it was not paused)")
    if "." in target:
        value = row.get("TypeLimit")
        return f"{target}: " + (f"at most {value} in Processing at once" if value else "no limit")
    value = row.get("GroupLimit")
    return f"{target}: " + (f"at most {value} of one group in Processing at once" if value else
                            "one of a group at a time, in order")
