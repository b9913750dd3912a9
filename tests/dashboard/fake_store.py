"""A store that answers as the database's views and procedures do, in memory: the health
comes from the items it holds (through relq.status.summarize, as QueueHealth_V's rows
would: a row per unfinished state, none for a finished one), the worker view's columns
are Notification's, the controls follow dbo.Move_<Queue>_utx's rules and refuse a stale
token with 735705, and a permission is held only when granted (a role's grants, as
database/security has them)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from relq import db, status
from relq.controls import Control
from relq.dashboard import store as dashboard_store
from relq.dashboard.store import (
    ACTIONS,
    COUNTED,
    LISTED,
    AttemptKey,
    AttemptRow,
    Column,
    CounterReading,
    Ended,
    Filter,
    bucket_of,
)
from tests.results import ITEM_COLUMNS

T0 = datetime(2026, 11, 26, 9, 0, 0)
NOW = T0 + timedelta(hours=1)  # the views' SYSUTCDATETIME()
STATES = ("Pending", "Processing", "Error", "Failed", "Completed", "Cancelled", "Paused", "Terminated",
          "PartiallyCompleted")  # dbo.QueueStatus
UNFINISHED = ("Pending", "Processing", "Error", "Paused")  # dbo.QueueIsFinished_fn = 0: QueueHealth_V's rows
COLUMNS = [Column("EnqueuedAt", "_Timestamp"), Column("Type", "_Type"), Column("Status", "QueueState"),
           Column("AttemptNum", "AttemptNum"), Column("ScheduledFor", "_Timestamp"),
           Column("UpdatedAt", "_Timestamp"), Column("Error", "WebResponse"), Column("UserID", "DbUserID"),
           Column("Username", "DbUsername"), Column("OTP", "OtpCode"), Column("EmailTo", "Email"),
           Column("EmailError", "WebResponse"), Column("GroupKey", "GroupKey"),
           Column("DedupKey", "DedupKey"), Column("PhoneNumber", "PhoneNumber")]
# SyncQueue's worker view: a job's entity instead of a notification's channels.
JOB_COLUMNS = [Column("EnqueuedAt", "_Timestamp"), Column("Type", "_Type"), Column("EntityKey", "EntityKey"),
               Column("Status", "QueueState"), Column("AttemptNum", "AttemptNum"),
               Column("ScheduledFor", "_Timestamp"), Column("UpdatedAt", "_Timestamp"),
               Column("GroupKey", "GroupKey"), Column("DedupKey", "DedupKey"), Column("Error", "WebResponse")]
QUEUES = ("Notification", "SyncQueue")


def role_grants(role: str) -> set[tuple[str, str]]:
    """What database/security grants the role (the objects the dashboard asks about)."""
    if role == "QueueMonitor":
        return {("dbo.QueueHealth_V", "SELECT"), ("dbo.QueueThroughput_V", "SELECT"),
                ("dbo.QueueAttemptOutcome_V", "SELECT"), ("dbo.QueueItemKey_V", "SELECT"),
                ("dbo.QueueControl_V", "SELECT"), ("dbo.QueueBatch_V", "SELECT"),
                ("dbo.QueueSchedule_V", "SELECT")}
    if role == "QueueAdmin":
        grants = {("dbo.QueueAttempt_V", "SELECT"), ("dbo.QueueControl_V", "SELECT"),
                  ("dbo.Pause_Queue_trx", "EXECUTE"), ("dbo.Resume_Queue_trx", "EXECUTE"),
                  ("dbo.Limit_Queue_trx", "EXECUTE")}
        for q in QUEUES:
            grants |= {(f"dbo.Worker_{q}_V", "SELECT")}
            grants |= {(f"dbo.{a}_{q}_trx", "EXECUTE") for a in ACTIONS}
            grants |= {(f"dbo.Purge_{q}_trx", "EXECUTE")}  # QUEUE.grants.sql.tmpl
        return grants
    raise ValueError(role)


def refused(number: int, text: str) -> db.SqlError:
    return db.SqlError([db.ServerMessage(number, f"relq: {text}", "42000")])


@dataclass
class FakeStore:
    items_by_queue: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    attempts_by_key: dict[tuple[str, datetime], list[dict[str, Any]]] = field(default_factory=dict)
    granted: set[tuple[str, str]] = field(default_factory=set)
    asked_columns: list[list[str]] = field(default_factory=list)
    listed: list[tuple[str, Filter, int]] = field(default_factory=list)
    counted: list[tuple[str, Filter, int]] = field(default_factory=list)
    acted: list[tuple[str, str, datetime, datetime, datetime | None]] = field(default_factory=list)
    changed_behind: set[datetime] = field(default_factory=set)  # keys another user changes before an act
    down: Exception | None = None  # raised by every read: the server is gone
    clock: int = 0
    # /metrics' counters: the server's clock for their reads, the rows no read sees yet (their
    # transaction has not committed: (queue, EnqueuedAt) of an item, (queue, EnqueuedAt,
    # StartedAt) of an attempt), and each read's (since, window_ms, followed).
    server_now: datetime = NOW
    uncommitted: set[tuple[Any, ...]] = field(default_factory=set)
    counter_reads: list[tuple[datetime | None, int, tuple[AttemptKey, ...]]] = field(default_factory=list)
    # bulk actions: the purges asked (queue, key, token), and the keys another session holds
    # locked (an operator's Retry_ under way, a purge): the exact mode's READPAST passes over them
    purged: list[tuple[str, datetime, datetime]] = field(default_factory=list)
    held: set[datetime] = field(default_factory=set)
    # ORIGINAL_LOGIN(), for the audit lines (web.client); None: a login the store cannot name, so
    # that a line names the address alone
    login_name: str | None = None
    # dbo.QueueControl: (queue, type or None) -> (who, when, why) of a pause; the controls asked
    # (action, queue, type, reason, by); the job types of each queue (dbo.<Queue>Type)
    paused: dict[tuple[str, str | None], tuple[str, datetime, str]] = field(default_factory=dict)
    controlled: list[tuple[str, str, str | None, str | None, str | None]] = field(default_factory=list)
    types_by_queue: dict[str, tuple[str, ...]] = field(
        default_factory=lambda: {"Notification": ("ResetPassword",),
                                 "SyncQueue": ("CustomerSync", "InventorySync")})
    # dbo.QueueBatch_V's rows (relq.batches.COLUMNS as keys), and each batches() call's limit
    batch_rows: list[dict[str, Any]] = field(default_factory=list)
    batch_reads: list[int] = field(default_factory=list)
    # dbo.QueueSchedule_V's rows (the columns of relq.schedules.LIST_SQL)
    schedule_rows: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def with_roles(cls, *roles: str) -> FakeStore:
        store = cls({q: [] for q in QUEUES})
        for role in roles:
            store.granted |= role_grants(role)
        return store

    def add(self, queue: str, n: int, status: str = "Pending", type: str = "ResetPassword",
            error: str = "", **columns: Any) -> list[datetime]:
        keys = []
        for _ in range(n):
            self.clock += 1
            key = T0 + timedelta(seconds=self.clock)
            row = {"EnqueuedAt": key, "Type": type, "Status": status, "AttemptNum": 1, "ScheduledFor": key,
                   "UpdatedAt": key + timedelta(microseconds=1), "Error": error, "UserID": 7,
                   "Username": "ann", "OTP": "123456", "EmailTo": "ann.lee@example.com", "EmailError": "",
                   "EntityKey": None, "GroupKey": None, "DedupKey": None, "PhoneNumber": None}
            row.update(columns)
            self.items_by_queue.setdefault(queue, []).append(row)
            keys.append(key)
        return keys

    def _find(self, queue: str, key: datetime) -> dict[str, Any] | None:
        return next((r for r in self.items_by_queue.get(queue, []) if r["EnqueuedAt"] == key), None)

    # -- schedules (relq/dashboard/schedules.py): the server's clock and the schedules by name

    def schedules(self) -> tuple[datetime, list[dict[str, Any]]]:
        if self.down is not None:
            raise self.down
        self._require("dbo.QueueSchedule_V", "SELECT")
        return self.server_now, [dict(r) for r in sorted(self.schedule_rows, key=lambda r: r["Name"])]

    # -- batches (relq/dashboard/batches.py): dbo.QueueBatch_V's rows, as SqlStore.batches reads them

    def batches(self, limit: int) -> list[dict[str, Any]]:
        if self.down is not None:
            raise self.down
        self._require("dbo.QueueBatch_V", "SELECT")
        self.batch_reads.append(limit)
        newest = sorted(self.batch_rows, key=lambda r: r["BatchID"], reverse=True)
        running = [r for r in newest if r["CallbackEnqueuedAt"] is None][:limit]
        ids = {r["BatchID"] for r in running} | {r["BatchID"] for r in newest[:limit]}
        return [dict(r) for r in newest if r["BatchID"] in ids]

    # -- dead letters (relq/dashboard/deadletters.py): dbo.DeadLetter_V's rows, as the views and
    # dbo.Replay_DeadLetter_trx / dbo.Delete_DeadLetter_trx answer; a letter that another operator
    # acts on first (``letters_behind``) is gone when this one acts (735716), and ``replay_refusal``
    # is what the next replay's send raises (735707: its transport queue gone, or expired).
    letters: list[dict[str, Any]] = field(default_factory=list)
    letter_acts: list[tuple[str, int]] = field(default_factory=list)
    letters_behind: set[int] = field(default_factory=set)
    replay_refusal: db.SqlError | None = None

    def grant_letters(self, *roles: str) -> FakeStore:
        """The grants of database/security/DeadLetter.grants.sql, for ``roles``."""
        for role in roles:
            if role == "QueueAdmin":
                self.granted |= {("dbo.DeadLetter_V", "SELECT"), ("dbo.DeadLetterCount_V", "SELECT"),
                                 ("dbo.Replay_DeadLetter_trx", "EXECUTE"),
                                 ("dbo.Delete_DeadLetter_trx", "EXECUTE")}
            elif role == "QueueMonitor":
                self.granted |= {("dbo.DeadLetterCount_V", "SELECT")}
        return self

    def add_letters(self, n: int, kind: str = "FifoQueue", queue: str | None = None, error: str = "boom",
                    deliveries: int = 5) -> list[int]:
        """``n`` dead letters, each newer than the last; their DeadLetterIds."""
        ids = []
        for _ in range(n):
            letter_id = max((r["DeadLetterId"] for r in self.letters), default=0) + 1
            self.letters.append({
                "DeadLetterId": letter_id, "Kind": kind, "Queue": queue, "MessageKey": 1000 + letter_id,
                "MessageId": None, "CorrelationId": None, "DeliveryCount": deliveries, "Error": error,
                "FirstFailedAt": T0 + timedelta(minutes=letter_id),
                "DeadLetteredAt": T0 + timedelta(minutes=letter_id, seconds=30), "EnqueuedAt": T0,
                "DueAt": None, "Expires": None, "PayloadBytes": 12})
            ids.append(letter_id)
        return ids

    def dead_letters(self, page: Any, limit: int) -> list[dict[str, Any]]:
        """``page``: a relq.dashboard.store.LetterPage."""
        from relq.dashboard.store import LETTER

        if self.down:
            raise self.down
        self._require("dbo.DeadLetter_V", "SELECT")
        rows = sorted(self.letters, key=lambda r: r["DeadLetterId"], reverse=not page.backward)
        if page.after is not None:
            rows = [r for r in rows if r["DeadLetterId"] < page.after]
        elif page.before is not None:
            rows = [r for r in rows if r["DeadLetterId"] > page.before]
        rows = [{c: r[c] for c in LETTER} for r in rows[:limit]]
        return rows[::-1] if page.backward else rows

    def dead_letter_counts(self) -> list[dict[str, Any]]:
        self._require("dbo.DeadLetterCount_V", "SELECT")
        groups: dict[tuple[str, str | None], list[dict[str, Any]]] = {}
        for r in self.letters:
            groups.setdefault((r["Kind"], r["Queue"]), []).append(r)
        return [{"Kind": kind, "Queue": queue, "DeadLetters": len(rows),
                 "LastDeadLetteredAt": max(r["DeadLetteredAt"] for r in rows)}
                for (kind, queue), rows in sorted(groups.items(), key=lambda g: (g[0][0], g[0][1] or ""))]

    def _take_letter(self, procedure: str, letter_id: int) -> dict[str, Any]:
        self._require(procedure, "EXECUTE")
        if letter_id in self.letters_behind:  # another operator's action came first
            self.letters = [r for r in self.letters if r["DeadLetterId"] != letter_id]
        found = next((r for r in self.letters if r["DeadLetterId"] == letter_id), None)
        if found is None:
            raise refused(735716, f"{procedure}: dead letter {letter_id} is no longer there: another "
                                  "operator has replayed or deleted it")
        return found

    def replay_dead_letter(self, dead_letter_id: int) -> dict[str, Any]:
        letter = self._take_letter("dbo.Replay_DeadLetter_trx", dead_letter_id)
        self.letter_acts.append(("replay", dead_letter_id))
        refusal, self.replay_refusal = self.replay_refusal, None
        if refusal is not None:  # the send refused it: the whole replay is rolled back
            raise refusal
        self.letters.remove(letter)
        transport = letter["Kind"] == "TransportMessage"
        return {"Kind": letter["Kind"], "Queue": letter["Queue"],
                "MessageKey": None if transport else 5000 + dead_letter_id,
                "MessageId": letter["MessageId"] if transport else None}

    def delete_dead_letter(self, dead_letter_id: int) -> None:
        letter = self._take_letter("dbo.Delete_DeadLetter_trx", dead_letter_id)
        self.letter_acts.append(("delete", dead_letter_id))
        self.letters.remove(letter)

    # -- the Store contract ----------------------------------------------------------------

    def permissions(self, wanted: list[tuple[str, str]]) -> list[bool]:
        if self.down:
            raise self.down
        return [pair in self.granted for pair in wanted]

    def _require(self, obj: str, permission: str) -> None:
        if (obj, permission) not in self.granted:
            raise refused(229, f"The {permission} permission was denied on the object '{obj}'")

    def login(self) -> str | None:
        if self.down:
            raise self.down
        return self.login_name

    def health(self) -> list[status.QueueHealth]:
        self._require("dbo.QueueHealth_V", "SELECT")
        health_rows, throughput_rows = [], []
        for queue, rows in self.items_by_queue.items():
            for state in UNFINISHED:
                of_state = [r for r in rows if r["Status"] == state]
                due = [r["ScheduledFor"] for r in of_state
                       if state in ("Pending", "Error") and r["ScheduledFor"] <= NOW]
                oldest = int((NOW - min(due)).total_seconds()) if due else None
                past_lease = sum(r.get("LeaseUntil") is not None and r["LeaseUntil"] < NOW for r in of_state
                                 if state == "Processing")
                health_rows.append((queue, state, len(of_state), oldest, past_lease))
            done = sum(r["Status"] == "Completed" for r in rows)
            failed = sum(r["Status"] == "Failed" for r in rows)
            throughput_rows.append((queue, done / 15, failed / 15, 0.0, 120 if done else None,
                                    900 if done else None))
        return status.summarize(health_rows, throughput_rows, self._controls())

    def _controls(self) -> list[Control]:
        """dbo.QueueControl_V's rows: each queue, and each of its types."""
        found = []
        for queue in self.items_by_queue:
            queue_paused = (queue, None) in self.paused
            for type_ in (None, *self.types_by_queue.get(queue, ())):
                pause = self.paused.get((queue, type_))
                who, when, why = pause or (None, None, None)
                found.append(Control(queue, type_, pause is not None, pause is not None or queue_paused,
                                     who, when, why, group_limit=1 if type_ is None else None))
        return found

    def control(self, action: str, queue: str, type_: str | None, reason: str | None,
                by: str | None) -> dict[str, Any]:
        self._require(f"dbo.{action}_Queue_trx", "EXECUTE")
        self.controlled.append((action, queue, type_, reason, by))
        known = queue in self.items_by_queue and (type_ is None or type_ in self.types_by_queue[queue])
        if not known:
            raise refused(735717, f"dbo.{action}_Queue_trx: {queue}.{type_} is not a relational queue or "
                                  "one of its job types (dbo.QueueControl_V lists them)")
        if action == "Pause":
            if not (reason or "").strip():
                raise refused(735718, f"dbo.Pause_Queue_trx: {queue}: a pause needs its reason in 1 to 400 "
                                      "characters, and who acts in 1 to 128")
            self.paused[(queue, type_)] = (by or self.login_name or "login", NOW, reason or "")
            return {"Queue": queue, "Type": type_ or "", "IsPaused": True}
        self.paused.pop((queue, type_), None)
        return {"Queue": queue, "Type": type_ or "", "IsPaused": False}

    def columns(self, queue: str) -> list[Column]:
        return list(JOB_COLUMNS if queue == "SyncQueue" else COLUMNS)

    # -- the item lists: the worker view's rows, filtered, ordered and paged as list_sql's
    # query does, but by other means (sorting the rows in Python), so that the two can differ

    def _matching(self, queue: str, where: Filter) -> list[dict[str, Any]]:
        return [r for r in self.items_by_queue.get(queue, [])
                if (not where.status or r["Status"] == where.status)
                and (not where.type or r["Type"] == where.type)
                and (not where.error or where.error in r["Error"])
                and all(r.get(search.column) == value for search, value in where.searches())]

    def items(self, queue: str, where: Filter, limit: int) -> list[dict[str, Any]]:
        self._require(f"dbo.Worker_{queue}_V", "SELECT")
        self.listed.append((queue, where, limit))

        def place(r: dict[str, Any]) -> tuple[datetime, ...]:
            return (r["UpdatedAt"], r["EnqueuedAt"]) if where.by_update else (r["EnqueuedAt"],)

        def at(key: Any, updated: Any) -> tuple[datetime, ...]:
            return (updated, key) if where.by_update else (key,)

        def later(r: dict[str, Any], cursor: tuple[datetime, ...]) -> bool:
            """Whether ``r`` comes after the row at ``cursor`` in the list's order."""
            return place(r) < cursor if where.newest_first else place(r) > cursor

        shown = sorted(self._matching(queue, where), key=place, reverse=where.newest_first)
        if where.after is not None:
            cursor = at(where.after, where.after_updated)
            page = [r for r in shown if later(r, cursor)][:limit]
        elif where.before is not None:
            cursor = at(where.before, where.before_updated)
            page = [r for r in shown if place(r) != cursor and not later(r, cursor)][-limit:]
        else:
            page = shown[-limit:] if where.last else shown[:limit]
        return [{c: r[c] for c in LISTED} for r in page]

    def count(self, queue: str, where: Filter, cap: int) -> int:
        self._require(f"dbo.Worker_{queue}_V", "SELECT")
        self.counted.append((queue, where, cap))
        return min(len(self._matching(queue, where)), cap + 1)

    def item(self, queue: str, key: datetime, columns: list[str]) -> dict[str, Any] | None:
        self._require(f"dbo.Worker_{queue}_V", "SELECT")
        self.asked_columns.append(list(columns))
        row = self._find(queue, key)
        return None if row is None else {c: row[c] for c in columns}

    def attempts(self, queue: str, key: datetime) -> list[dict[str, Any]]:
        self._require("dbo.QueueAttempt_V", "SELECT")
        return list(self.attempts_by_key.get((queue, key), []))

    def act(self, queue: str, action: str, key: datetime, token: datetime,
            scheduled_for: datetime | None = None) -> dict[str, Any]:
        self._require(f"dbo.{action}_{queue}_trx", "EXECUTE")
        self.acted.append((queue, action, key, token, scheduled_for))
        row = self._find(queue, key)
        if row is None:
            raise refused(735704, "no item has that key")
        if key in self.changed_behind:
            row["UpdatedAt"] += timedelta(seconds=1)
        if token != row["UpdatedAt"]:
            raise refused(735705, f"dbo.{action}_{queue}_trx: the item changed since it was read")
        allowed = {"Retry": ("Failed",), "Cancel": ("Pending", "Processing", "Error", "Paused"),
                   "Pause": ("Pending", "Error"), "Resume": ("Paused",),
                   "Reschedule": ("Pending", "Error", "Paused")}[action]
        if row["Status"] not in allowed:
            raise refused(735706, f"{action} is not allowed from {row['Status']}")
        row["Status"] = {"Retry": "Pending", "Cancel": "Cancelled", "Pause": "Paused", "Resume": "Pending",
                         "Reschedule": row["Status"]}[action]
        if action == "Retry":
            row["AttemptNum"] = 0
            row["ScheduledFor"] = scheduled_for or NOW
        elif scheduled_for is not None:
            row["ScheduledFor"] = scheduled_for
        row["UpdatedAt"] += timedelta(seconds=1)
        return {k: row[k] for k in ITEM_COLUMNS}

    # -- bulk actions: dbo.Purge_<Queue>_trx's exact mode with one key, as relq.dashboard.store's
    # SqlStore.purge_item calls it: removed only if finished, its token the one given, not held

    def purge_item(self, queue: str, key: datetime, token: datetime) -> bool:
        self._require(f"dbo.Purge_{queue}_trx", "EXECUTE")
        self.purged.append((queue, key, token))
        row = self._find(queue, key)
        if row is None:
            return False
        if key in self.changed_behind:
            row["UpdatedAt"] += timedelta(seconds=1)
        if token != row["UpdatedAt"] or row["Status"] not in status.FINISHED or key in self.held:
            return False
        self.items_by_queue[queue].remove(row)
        self.attempts_by_key.pop((queue, key), None)
        return True

    # -- /metrics' counters: dbo.QueueAttemptOutcome_V and dbo.QueueItemKey_V, as SqlStore's read
    # aggregates them (relq.dashboard.store.COUNTER_BATCH) --------------------------------------

    def start(self, queue: str, key: datetime, started: datetime, committed: bool = True) -> AttemptKey:
        """An attempt of the item ``key`` that starts (is claimed) at ``started``."""
        self.attempts_by_key.setdefault((queue, key), []).insert(
            0, {"StartedAt": started, "AttemptNum": 1, "Step": None, "LockedBy": "host/1", "Outcome": None,
                "Duration": None, "Response": "", "Error": ""})
        if not committed:
            self.uncommitted.add((queue, key, started))
        return AttemptKey(queue, key, started)

    def end(self, attempt: AttemptKey, outcome: str, duration_ms: int | None) -> None:
        row = next(a for a in self.attempts_by_key[(attempt.queue, attempt.enqueued_at)]
                   if a["StartedAt"] == attempt.started_at)
        row.update(Outcome=outcome, Duration=duration_ms)

    def purge_attempt(self, attempt: AttemptKey) -> None:
        rows = self.attempts_by_key[(attempt.queue, attempt.enqueued_at)]
        rows[:] = [a for a in rows if a["StartedAt"] != attempt.started_at]

    def _attempt_rows(self) -> list[AttemptRow]:
        return [AttemptRow(AttemptKey(queue, key, a["StartedAt"]), a["Outcome"], a["Duration"])
                for (queue, key), rows in self.attempts_by_key.items() for a in rows
                if (queue, key, a["StartedAt"]) not in self.uncommitted]

    def counter_reading(self, since: datetime | None, window_ms: int,
                        followed: Sequence[AttemptKey]) -> CounterReading:
        if self.down:
            raise self.down
        self._require("dbo.QueueAttemptOutcome_V", "SELECT")
        self._require("dbo.QueueItemKey_V", "SELECT")
        self.counter_reads.append((since, window_ms, tuple(followed)))
        start = self.server_now - timedelta(milliseconds=window_ms)
        since = start if since is None else since
        bound = max(start, since)
        rows = self._attempt_rows()
        groups: dict[tuple[str, str, int | None], list[int]] = {}
        leaving = []
        for r in rows:
            if r.key.started_at < since:
                continue
            if r.outcome is None:
                if r.key.started_at < bound:
                    leaving.append(r.key)
            elif r.outcome in COUNTED:
                bucket = None if r.duration_ms is None else bucket_of(r.duration_ms)
                group = groups.setdefault((r.key.queue, r.outcome, bucket), [0, 0, 0, 0])
                past = r.key.started_at >= bound
                group[0] += 1
                group[1] += past
                group[2] += r.duration_ms or 0
                group[3] += (r.duration_ms or 0) if past else 0
        enqueued = {}
        for queue, items in self.items_by_queue.items():
            keys = [r["EnqueuedAt"] for r in items
                    if r["EnqueuedAt"] >= since and (queue, r["EnqueuedAt"]) not in self.uncommitted]
            if keys:
                enqueued[queue] = (len(keys), sum(k >= bound for k in keys))
        asked = {k.started_at for k in followed}
        ended = [Ended(*key, *figures) for key, figures in groups.items()]
        again = [r for r in rows if r.key.started_at in asked]
        return CounterReading(since, bound, ended, leaving, enqueued, again)

    # -- stuck work (relq/dashboard/stuck.py): dbo.Worker_<Queue>_V's items in Processing in lease
    # order, and who holds them, as store.processing_sql and store.holders_sql read them (a lease
    # past when it is before NOW, their SYSUTCDATETIME()), but sorted and counted here
    # in Python, so that the two can differ; ``stuck_reads``: each read's (method, queue, argument)
    stuck_reads: list[tuple[str, str, Any]] = field(default_factory=list)

    def hold(self, queue: str, locked_by: str | None, leases: list[timedelta | None],
             **columns: Any) -> list[datetime]:
        """Items in Processing held by ``locked_by``, one per lease (its end, from NOW;
        None: no lease), each claimed 5 minutes before its lease ends (or before now)."""
        keys = []
        for lease in leases:
            until = None if lease is None else NOW + lease
            started = (until or NOW) - timedelta(minutes=5)
            keys += self.add(queue, 1, "Processing", LockedBy=locked_by, LeaseUntil=until, StartedAt=started,
                             **columns)
        return keys

    @staticmethod
    def _lease_place(lease: datetime | None, key: datetime) -> tuple[bool, datetime, datetime]:
        return (lease is not None, lease or T0, key)  # no lease first, as ORDER BY ... ASC puts NULL

    def _held(self, queue: str) -> list[dict[str, Any]]:
        held = [r for r in self.items_by_queue.get(queue, []) if r["Status"] == "Processing"]
        return sorted(held, key=lambda r: self._lease_place(r.get("LeaseUntil"), r["EnqueuedAt"]))

    def processing(self, queue: str, after: Any, limit: int) -> list[dict[str, Any]]:
        """``after``: a relq.dashboard.store.LeasePlace, or None."""
        from relq.dashboard.store import HELD

        if self.down:
            raise self.down
        self._require(f"dbo.Worker_{queue}_V", "SELECT")
        self.stuck_reads.append(("processing", queue, after))
        rows = self._held(queue)
        if after is not None:
            at = self._lease_place(after.lease_until, after.key)
            rows = [r for r in rows if self._lease_place(r.get("LeaseUntil"), r["EnqueuedAt"]) > at]
        return [{**{c: r.get(c) for c in HELD}, "ReadAt": NOW} for r in rows[:limit]]

    def holders(self, queue: str, cap: int) -> list[dict[str, Any]]:
        if self.down:
            raise self.down
        self._require(f"dbo.Worker_{queue}_V", "SELECT")
        self.stuck_reads.append(("holders", queue, cap))
        by_worker: dict[str | None, list[dict[str, Any]]] = {}
        for r in self._held(queue)[:cap]:
            by_worker.setdefault(r.get("LockedBy"), []).append(r)
        out = []
        for worker, rows in by_worker.items():
            leases = [r["LeaseUntil"] for r in rows if r.get("LeaseUntil") is not None]
            starts = [r["StartedAt"] for r in rows if r.get("StartedAt") is not None]
            out.append({"LockedBy": worker, "Items": len(rows),
                        "PastLease": sum(lease < NOW for lease in leases),
                        "HeldSince": min(starts, default=None), "OldestLease": min(leases, default=None),
                        "ReadAt": NOW})
        # the oldest lease first (a worker with an item without a lease before all), then the name
        return sorted(out, key=lambda h: (h["OldestLease"] is not None, h["OldestLease"] or T0,
                                          h["LockedBy"] or ""))

# -- an outage: a FakeStore behind a server that restarts, goes down and comes back --------------
# FlakyStore keeps the Store contract as FakeStore does, on a "connection" to a FakeServer, through
# relq.dashboard.store.through_outages (as SqlStore does): a read whose connection the server
# dropped is made again on a new one, an action is made once. SqlStore's own connection handling
# (replacing the connection, the pause after a failed connect) is tested against pyodbc-like
# connections in tests/dashboard/test_outage.py.

CANNOT_CONNECT = ("cannot reach SQL Server (server=db7.internal, uid=relq_ops): Unable to connect: Adaptive "
                  "Server is unavailable or does not exist; check that the server runs")


def restarted() -> db.SqlError:
    """What the first call on a connection from before a restart meets (FreeTDS's error 0)."""
    return db.SqlError([db.ServerMessage(0, "Unknown error", "HY000")])


def link_failed() -> db.SqlError:
    """What a call meets when the link fails under it (SQLSTATE 08S01)."""
    return db.SqlError([db.ServerMessage(10054, "TCP Provider: Error code 0x2746", "08S01")])


class FakeServer:
    """The server behind a FlakyStore. ``connects``: connections asked for (those refused too);
    ``lose_next_call``: the next control call's link fails "before" the server runs it, or
    "after" it committed, so that its answer is lost."""

    def __init__(self) -> None:
        self.up = True
        self.generation = 0  # a connection opened in another generation is gone
        self.error = restarted
        self.connects = 0
        self.lose_next_call: str | None = None

    def restart(self, error: Any = restarted) -> None:
        """Every connection open until now is gone; new ones may be opened."""
        self.generation += 1
        self.error = error

    def go_down(self) -> None:
        """Every connection is gone, and no new one can be opened until come_back."""
        self.restart(link_failed)
        self.up = False

    def come_back(self) -> None:
        self.up = True


class FlakyStore:
    """``inner``'s Store contract on one connection to ``server``; anything else (add, acted,
    items_by_queue, ...) is ``inner``'s."""

    def __init__(self, inner: FakeStore, server: FakeServer | None = None) -> None:
        self.inner = inner
        self.server = server or FakeServer()
        self.connection: int | None = None  # the generation it was opened in
        self.opened = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def use(self) -> None:
        """Open the connection if there is none; fail as a call on it would if the server dropped it."""
        if self.connection is None:
            self.server.connects += 1
            if not self.server.up:
                raise dashboard_store.Unreachable(CANNOT_CONNECT, first=not self.opened)
            self.connection, self.opened = self.server.generation, True
        elif self.connection != self.server.generation:
            self.connection = None
            raise self.server.error()

    def act(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        self.use()
        lose, self.server.lose_next_call = self.server.lose_next_call, None
        if lose == "before":  # the link fails while the call travels: the server never runs it
            self.server.restart(link_failed)
            self.use()
        done = self.inner.act(*args, **kwargs)
        if lose == "after":  # the procedure committed; its answer is lost on the way
            self.server.restart(link_failed)
            self.use()
        return done


def _on_the_server(name: str) -> Any:
    def read(self: FlakyStore, *args: Any, **kwargs: Any) -> Any:
        self.use()
        return getattr(self.inner, name)(*args, **kwargs)

    read.__name__ = name
    return read


for _read in dashboard_store.contract():
    if _read != "act":
        setattr(FlakyStore, _read, _on_the_server(_read))
dashboard_store.through_outages(FlakyStore)
