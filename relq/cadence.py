"""Recurring schedules' slots, in UTC: when a schedule (dbo.QueueSchedule) is due, which of its
missed slots a scheduler enqueues (its misfire policy), and the slot after them.

A schedule's cadence is a cron expression or an interval. Cron is evaluated here, by cronsim
(https://pypi.org/project/cronsim/): it follows Debian's cron, field for field, checks an
expression strictly, with a short reason for a bad one, has no dependencies, and takes an
optional seconds field (6 fields, seconds first). Every time here is naive UTC, as relq stores
times: no daylight saving time, so every slot exists exactly once. An interval's slots are its
anchor (the schedule's first slot) plus whole intervals.

A scheduler reads a due schedule's NextSlotAt and calls dbo.Fire_QueueSchedule_trx once per
:class:`Fire` of :func:`plan`; the procedure's compare-and-set on NextSlotAt makes each slot
enqueued once, whichever scheduler gets there first.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from cronsim import CronSim, CronSimError

from relq.errors import RelqError

MAX_INTERVAL_S = 31_622_400  # 366 days: dbo.QueueSchedule's QueueSchedule_IntervalIsWithin_OneYear
MAX_CATCH_UP = 1000  # its QueueSchedule_MisfireIs_SkipOrCatchUp
CRON_FIELDS = "minute hour day-of-month month day-of-week, or 6 with a second first"
SECOND = timedelta(seconds=1)


def whole_second(moment: datetime) -> datetime:
    """``moment`` cut to its second: slots are whole seconds."""
    return moment.replace(microsecond=0)


def check_cron(expr: str) -> str:
    """The expression, stripped, when cronsim takes it; else RelqError in one line naming what
    is wrong (cronsim's reason: "Bad minute", "Wrong number of fields")."""
    text = " ".join(expr.split()) if isinstance(expr, str) else ""
    if not text:
        raise RelqError(f"cron expression {expr!r} is empty: give 5 fields ({CRON_FIELDS})")
    if len(text) > 200:
        raise RelqError(f"cron expression {text!r} is longer than 200 characters")
    try:
        CronSim(text, datetime(2000, 1, 1))
    except CronSimError as exc:
        reason = str(exc).rstrip(".") or "not understood"
        raise RelqError(f"cron expression {text!r} is not valid: {reason[:1].lower()}{reason[1:]} "
                        f"(5 fields: {CRON_FIELDS})") from None
    return text


def check_interval(seconds: int) -> int:
    if not 1 <= seconds <= MAX_INTERVAL_S:
        raise RelqError(f"an interval must be 1 to {MAX_INTERVAL_S:,} seconds (366 days), not {seconds}")
    return seconds


def check_catch_up(slots: int | None) -> int | None:
    if slots is not None and not 1 <= slots <= MAX_CATCH_UP:
        raise RelqError(f"catch-up must be 1 to {MAX_CATCH_UP} slots, not {slots}")
    return slots


@dataclass(frozen=True)
class Cadence:
    """A cron expression (UTC) or an interval in seconds: exactly one of them."""

    cron: str | None = None
    interval_s: int | None = None

    def __post_init__(self) -> None:
        if (self.cron is None) == (self.interval_s is None):
            raise RelqError("a schedule needs either a cron expression or an interval, not both or neither")

    def after(self, moment: datetime, anchor: datetime) -> datetime:
        """The first slot strictly after ``moment``; ``anchor`` is one slot of an interval."""
        if self.interval_s is not None:
            step = timedelta(seconds=self.interval_s)
            if moment < anchor:
                return anchor
            return anchor + step * ((moment - anchor) // step + 1)
        return next(CronSim(self.cron, whole_second(moment)))  # type: ignore[arg-type]

    def latest(self, now: datetime, since: datetime, count: int, anchor: datetime) -> list[datetime]:
        """Up to ``count`` slots from ``since`` to ``now`` (both included), the latest ones,
        oldest first. ``since`` (the schedule's NextSlotAt) counts as a slot."""
        if count < 1 or since > now:
            return []
        if self.interval_s is not None:
            step = timedelta(seconds=self.interval_s)
            last = (now - anchor) // step
            first = max((since - anchor) // step, last - count + 1)
            slots = [anchor + step * k for k in range(first, last + 1)]
            slots = [s for s in slots if s >= since]
        else:
            slots = []
            for slot in CronSim(self.cron, whole_second(now) + SECOND, reverse=True):  # type: ignore[arg-type]
                if slot < since or len(slots) == count:
                    break
                slots.append(slot)
            slots.reverse()
        if since not in slots and len(slots) < count:
            slots.insert(0, since)  # NextSlotAt itself, though the cadence would not have it
        return slots


@dataclass(frozen=True)
class Fire:
    """One call of dbo.Fire_QueueSchedule_trx: move the schedule from ``due_at`` (the NextSlotAt
    read) to ``next_slot_at``, enqueuing ``slot_at``."""

    due_at: datetime
    slot_at: datetime
    next_slot_at: datetime


def plan(cadence: Cadence, due_at: datetime, now: datetime, catch_up: int | None = None) -> list[Fire]:
    """The fires that enqueue a schedule's due slots, oldest first; [] when it is not due.

    ``due_at``: the schedule's NextSlotAt; ``now``: the server's time; ``catch_up``: its misfire
    policy, None for Skip (the latest slot up to now alone), N for CatchUp (the latest N of them,
    one job each). Slots older than those are skipped: the first fire moves the schedule past
    them. The last fire moves it to the first slot after now. Each fire's ``due_at`` is the
    previous one's ``next_slot_at``, so that a scheduler that loses a compare-and-set stops."""
    slots = cadence.latest(now, due_at, catch_up or 1, anchor=due_at)
    if not slots:
        return []
    fires = []
    due = due_at
    for n, slot in enumerate(slots):
        following = slots[n + 1] if n + 1 < len(slots) else cadence.after(max(slot, now), anchor=due_at)
        fires.append(Fire(due, slot, following))
        due = following
    return fires


def first_slot(cadence: Cadence, now: datetime) -> datetime | None:
    """A new schedule's first slot: a cron expression's first after ``now``; None for an interval,
    whose first slot the database takes as its own now (dbo.Add_QueueSchedule_trx)."""
    return None if cadence.interval_s is not None else cadence.after(now, anchor=now)


def resumed_slot(cadence: Cadence, next_slot_at: datetime, now: datetime) -> datetime:
    """The slot a resumed schedule goes on from: its NextSlotAt when that is still ahead, else
    the first slot from ``now`` on (an interval keeps its anchor), so that the paused time's
    slots are not enqueued."""
    if next_slot_at >= now:
        return next_slot_at
    return cadence.after(now - timedelta(microseconds=1), anchor=next_slot_at)
