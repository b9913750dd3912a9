"""What the dashboard reads and does in the database, and nothing else: the health views
(through relq.status, as `invoke status` reads them), a queue's worker view, the attempt
history view, the control procedures (through relq.db.call), and the login's permissions.

:class:`Store` is the contract; :class:`SqlStore` keeps it on one pyodbc connection, and
the offline tests keep it with a store that answers as the views do. Items are paged by
key (``EnqueuedAt``, or ``UpdatedAt`` then ``EnqueuedAt``, past the last one shown, or
before the first one shown read the other way), never with OFFSET. Each list is meant to
be one seek of an index that stops after its page: a list of an unfinished state seeks the
queue's health index (``IX_<Queue>_Status``: Status, then the key), which holds the
unfinished items only; a search by a business key seeks that key's index
(``IX_<Queue>_Search<Key>``, ``IX_<Queue>_<Channel>_Search<Column>``); a finished state by
last update seeks ``IX_<Queue>_FinishedByStatus``; any other list reads the queue in key
order from where the last page stopped. :func:`reading_note` says where a list's read is
not such a seek."""

from __future__ import annotations

import functools
import json
import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Protocol

from relq import batches as batches_module
from relq import controls, db, status
from relq import schedules as schedules_module
from relq.errors import RelqError

# The controls a page offers, each a procedure dbo.<Action>_<Queue>_trx that takes the
# item's key and token (and Retry, Resume, Reschedule a due time).
ACTIONS = ("Retry", "Cancel", "Pause", "Resume", "Reschedule")
QUEUE_ACTIONS = ("Pause", "Resume")  # of a whole queue or job type (dbo.Pause_Queue_trx, ...)
# The columns of an item list: every worker view has them.
LISTED = ("EnqueuedAt", "Type", "Status", "AttemptNum", "ScheduledFor", "UpdatedAt", "Error")
ATTEMPT = ("StartedAt", "AttemptNum", "Step", "LockedBy", "Outcome", "Duration", "Response", "Error")


@dataclass(frozen=True)
class Column:
    name: str
    type: str  # its type's name as the view declares it (an alias type such as OtpCode, or nvarchar)


@dataclass(frozen=True)
class Search:
    """A search of an item list by a business key: the Filter field (and URL parameter) that
    carries it, the worker view's column, the column's type as the parameter is cast to it
    (so that the comparison converts the one parameter, not every row: data type precedence),
    its longest value, and the filter of the index that serves it, stated literally."""

    field: str
    column: str
    sql_type: str
    length: int
    index_filter: str | None
    label: str  # what the page calls it


# The searches, each an exact match of a column that an index of every state keys first
# (database/tables, relq/scaffold/templates/every_queue/tables): a queue offers those whose
# column its worker view has.
SEARCHES = (
    Search("entity_key", "EntityKey", "NVARCHAR(200)", 200, None, "entity key"),  # dbo.EntityKey
    Search("dedup_key", "DedupKey", "NVARCHAR(200)", 200, "[DedupKey] IS NOT NULL", "dedup key"),
    Search("group_key", "GroupKey", "NVARCHAR(100)", 100, "[GroupKey] IS NOT NULL", "group key"),
    Search("email_to", "EmailTo", "NVARCHAR(254)", 254, None, "e-mail address"),  # dbo.Email
    Search("phone_number", "PhoneNumber", "VARCHAR(16)", 16, None, "phone number"),  # dbo.PhoneNumber
)
TYPE_LENGTH = 50  # dbo._Type


@dataclass(frozen=True)
class Filter:
    """Which items of a queue a list shows, in which order, and which page of them.

    The set: ``status``, ``type``, ``error`` (text the item's Error contains) and the
    searches (SEARCHES: an exact value of each). The order: by key (``EnqueuedAt``), or with
    ``by_update`` by ``UpdatedAt`` then the key; newest first or not. The page: the one past
    the row whose key is ``after`` (and, by update, whose UpdatedAt is ``after_updated``), the
    one before the row ``before`` (``before_updated``), the ``last`` one, or, with none of
    them, the first. :meth:`following` and :meth:`preceding` make the Filter of the page
    next to a row; :meth:`whole` the first page. A value that no column could hold is a
    ValueError: cast to the column's type, it would be cut and could match another."""

    status: str | None = None
    type: str | None = None
    error: str | None = None
    newest_first: bool = True
    after: datetime | None = None
    entity_key: str | None = None
    dedup_key: str | None = None
    group_key: str | None = None
    email_to: str | None = None
    phone_number: str | None = None
    by_update: bool = False
    after_updated: datetime | None = None
    before: datetime | None = None
    before_updated: datetime | None = None
    last: bool = False

    def __post_init__(self) -> None:
        for search, value in self.searches():
            if not value:
                raise ValueError(f"the {search.label} to search for is empty")
            if len(value) > search.length:
                raise ValueError(f"the {search.label} to search for has at most {search.length} "
                                 f"characters, not {len(value)}")
            if search.sql_type.startswith("VARCHAR") and not (value.isascii() and value.isprintable()):
                raise ValueError(f"the {search.label} to search for holds ASCII letters, digits and "
                                 f"signs only")
        if self.type is not None and len(self.type) > TYPE_LENGTH:
            raise ValueError(f"the type to list has at most {TYPE_LENGTH} characters")
        if sum((self.after is not None, self.before is not None, self.last)) > 1:
            raise ValueError("a page is after a row, before a row or the last one, not several")
        for key, updated, name in ((self.after, self.after_updated, "after"),
                                   (self.before, self.before_updated, "before")):
            if self.by_update and (key is None) != (updated is None):
                raise ValueError(f"by update, a page {name} a row names its key and its UpdatedAt")
            if not self.by_update and updated is not None:
                raise ValueError(f"in key order, a page {name} a row names its key alone")

    def searches(self) -> list[tuple[Search, str]]:
        """The searches this Filter makes, with their values."""
        return [(s, getattr(self, s.field)) for s in SEARCHES if getattr(self, s.field) is not None]

    @property
    def backward(self) -> bool:
        """Whether its page is read the other way (the page before a row, or the last one);
        a store returns it in the list's order all the same."""
        return self.before is not None or self.last

    @property
    def narrowed(self) -> bool:
        """Whether anything but the state narrows the set."""
        return bool(self.type or self.error or self.searches())

    def whole(self) -> Filter:
        """The same list from its first page."""
        return replace(self, after=None, after_updated=None, before=None, before_updated=None, last=False)

    def following(self, row: dict[str, Any]) -> Filter:
        """The page after ``row`` (a row this list showed)."""
        return replace(self.whole(), after=row["EnqueuedAt"],
                       after_updated=row["UpdatedAt"] if self.by_update else None)

    def preceding(self, row: dict[str, Any]) -> Filter:
        """The page before ``row``."""
        return replace(self.whole(), before=row["EnqueuedAt"],
                       before_updated=row["UpdatedAt"] if self.by_update else None)


class Store(Protocol):
    def permissions(self, wanted: list[tuple[str, str]]) -> list[bool]:
        """For each (object, permission), whether this login holds it."""
        ...

    def health(self) -> list[status.QueueHealth]: ...

    def login(self) -> str | None:
        """The login the dashboard's connection acts as, for the audit lines (guard.py, web.client):
        ORIGINAL_LOGIN(), read once."""
        ...

    def columns(self, queue: str) -> list[Column]:
        """The worker view's columns, in its order."""
        ...

    def items(self, queue: str, where: Filter, limit: int) -> list[dict[str, Any]]:
        """Up to ``limit`` items (the LISTED columns) of ``where``'s page, in its order (a page
        read backward too: its last ``limit`` rows, in the list's order)."""
        ...

    def count(self, queue: str, where: Filter, cap: int) -> int:
        """How many items ``where``'s set holds (its page aside), counted up to ``cap`` + 1:
        more than ``cap`` answers ``cap`` + 1."""
        ...

    def item(self, queue: str, key: datetime, columns: list[str]) -> dict[str, Any] | None: ...

    def attempts(self, queue: str, key: datetime) -> list[dict[str, Any]]:
        """The item's attempts, the latest first."""
        ...

    def act(self, queue: str, action: str, key: datetime, token: datetime,
            scheduled_for: datetime | None = None) -> dict[str, Any]:
        """Call dbo.<action>_<queue>_trx; the item as it returns it (EnqueuedAt, UpdatedAt,
        Status, ScheduledFor). Raises db.SqlError with the procedure's number."""
        ...

    def control(self, action: str, queue: str, type_: str | None, reason: str | None,
                by: str | None) -> dict[str, Any]:
        """Pause (``reason`` given) or Resume the queue (``type_`` None) or one job type, through
        dbo.Pause_Queue_trx or dbo.Resume_Queue_trx, ``by`` the person (None: the login); the
        control's row as the procedure returns it. Raises db.SqlError with its number."""
        ...

    def purge_item(self, queue: str, key: datetime, token: datetime) -> bool:
        """Remove one finished item whose token is still ``token`` (relq.dashboard.bulk), through
        dbo.Purge_<queue>_trx's exact mode with that one key; whether it did. False: the item is
        gone, changed, not finished, or another session held it (the purge passes over a row
        held, READPAST). Raises db.SqlError with the procedure's number."""
        ...

    def counter_reading(self, since: datetime | None, window_ms: int,
                        followed: Sequence[AttemptKey]) -> CounterReading:
        """What /metrics' counters read at a scrape (:func:`counter_batch`): the attempts that
        started and the items enqueued since ``since`` (None: ``window_ms`` before now), and the
        attempts of ``followed``."""
        ...

    # -- stuck work (relq/dashboard/stuck.py): processing_sql, holders_sql --

    def processing(self, queue: str, after: LeasePlace | None, limit: int) -> list[dict[str, Any]]:
        """Up to ``limit`` items in Processing (the HELD columns, and ReadAt: the database's
        clock), in lease order (LeaseUntil, then the key; an item without a lease first), past
        the item at ``after`` (None: from the first)."""
        ...

    def holders(self, queue: str, cap: int) -> list[dict[str, Any]]:
        """Who holds the first ``cap`` items in Processing in lease order: a row per LockedBy
        (the HOLDER columns, and ReadAt), the oldest lease first."""
        ...


def view(queue: str) -> str:
    return f"dbo.Worker_{_name(queue)}_V"


def procedure(action: str, queue: str) -> str:
    if action not in ACTIONS:
        raise ValueError(f"not a control: {action!r}")
    return f"dbo.{action}_{_name(queue)}_trx"


def purge_procedure(queue: str) -> str:
    """The queue's purge, whose exact mode removes a finished item by key and token (bulk.py)."""
    return f"dbo.Purge_{_name(queue)}_trx"


def _name(queue: str) -> str:
    """A queue's name as it goes into an object's name: an identifier, never SQL."""
    if not queue.isidentifier() or not queue.isascii():
        raise ValueError(f"not a queue name: {queue!r}")
    return queue


def _escape_like(text: str) -> str:
    """``text`` as a literal inside a LIKE pattern whose ESCAPE character is ``\\``."""
    return "".join("\\" + ch if ch in "\\%_[" else ch for ch in text)


# -- dead letters (relq/dashboard/deadletters.py) ------------------------------------------------
# The message queues' dead letters: a page of dbo.DeadLetter_V (never the payload itself), newest
# first, one seek of its clustered key (DeadLetterId) from where the page before stopped, or read
# the other way from the first letter shown, never OFFSET; how many wait, from
# dbo.DeadLetterCount_V; and the two actions, dbo.Replay_DeadLetter_trx and
# dbo.Delete_DeadLetter_trx, each made once: a letter's key is never reused, so a second operator's
# action on it is refused (735716), not done twice.
LETTER = ("DeadLetterId", "Kind", "Queue", "MessageKey", "MessageId", "CorrelationId", "DeliveryCount",
          "Error", "FirstFailedAt", "DeadLetteredAt", "EnqueuedAt", "DueAt", "Expires", "PayloadBytes")
DEAD_LETTER_COUNTS = ("SELECT Kind, Queue, DeadLetters, LastDeadLetteredAt FROM dbo.DeadLetterCount_V "
                      "ORDER BY Kind, Queue;")


@dataclass(frozen=True)
class LetterPage:
    """Which page of the dead letters: the one past the letter ``after`` (older letters), the
    one before the letter ``before`` (newer ones, read the other way), the ``last`` one (the
    oldest letters), or, with none of them, the first (the newest)."""

    after: int | None = None
    before: int | None = None
    last: bool = False

    def __post_init__(self) -> None:
        if sum((self.after is not None, self.before is not None, self.last)) > 1:
            raise ValueError("a page is after a letter, before a letter or the last one, not several")

    @property
    def backward(self) -> bool:
        """Whether its page is read oldest first (a store returns it newest first all the same)."""
        return self.before is not None or self.last


class BatchStore(Protocol):
    def batches(self, limit: int) -> list[dict[str, Any]]:
        """dbo.QueueBatch_V's rows (relq.batches.COLUMNS): the batches whose callback has not
        been enqueued yet, and the newest ``limit``, newest first, each once."""
        ...


# The unfinished batches (no callback yet: IX_QueueBatch_Running, whose filter the view's
# predicate states literally), then the newest; each a seek that stops after its rows.
BATCHES = (
    f"SELECT TOP (?) {', '.join(f'v.[{c}]' for c in batches_module.COLUMNS)} FROM dbo.QueueBatch_V AS v "
    "WHERE v.CallbackEnqueuedAt IS NULL ORDER BY v.BatchID DESC;"
)


class ScheduleStore(Protocol):
    def schedules(self) -> tuple[datetime, list[dict[str, Any]]]:
        """The server's clock (SYSUTCDATETIME()) and dbo.QueueSchedule_V's rows (the columns of
        relq.schedules.LIST_SQL), by name: every schedule (a few, one row each)."""
        ...


# The schedules, after the server's clock, in one batch: a slot's lateness is the server's.
SCHEDULES = "SELECT SYSUTCDATETIME() AS [Now]; " + schedules_module.LIST_SQL


class DeadLetterStore(Protocol):
    def dead_letters(self, page: LetterPage, limit: int) -> list[dict[str, Any]]:
        """Up to ``limit`` letters (the LETTER columns) of ``page``, newest first (a page read
        backward too: the ``limit`` letters next to its letter, newest first)."""
        ...

    def dead_letter_counts(self) -> list[dict[str, Any]]:
        """dbo.DeadLetterCount_V: Kind, Queue, DeadLetters, LastDeadLetteredAt."""
        ...

    def replay_dead_letter(self, dead_letter_id: int) -> dict[str, Any]:
        """Call dbo.Replay_DeadLetter_trx; its row (Kind, Queue, MessageKey, MessageId). Raises
        db.SqlError with the procedure's number."""
        ...

    def delete_dead_letter(self, dead_letter_id: int) -> None:
        """Call dbo.Delete_DeadLetter_trx. Raises db.SqlError with the procedure's number."""
        ...


def dead_letters_sql(page: LetterPage, limit: int) -> tuple[str, list[Any]]:
    """The keyset query of a page of dead letters and its parameters, in the order it is read."""
    columns = ", ".join(f"[{c}]" for c in LETTER)
    condition, params = "", []
    if page.after is not None:
        condition, params = " WHERE DeadLetterId < CAST(? AS BIGINT)", [int(page.after)]
    elif page.before is not None:
        condition, params = " WHERE DeadLetterId > CAST(? AS BIGINT)", [int(page.before)]
    order = "ASC" if page.backward else "DESC"
    return (f"SELECT TOP ({int(limit)}) {columns} FROM dbo.DeadLetter_V{condition} "
            f"ORDER BY DeadLetterId {order};", params)


# Parameters arrive as NVARCHAR text (relq.db.sql_value turns a datetime into ISO text); cast
# to the column's type, so that the comparison converts the parameter, not every row's value
# (data type precedence: NVARCHAR outranks VARCHAR), and the seek stays a seek.
KEY = "CAST(? AS DATETIME2(7))"
# The health index's filter, word for word. The optimizer uses a filtered index for a query
# only when the query's predicate makes its results a subset of the filter, and a parameter
# (the state asked for) proves nothing when the plan is compiled; this literal does
# ("Create filtered indexes",
# https://learn.microsoft.com/sql/relational-databases/indexes/create-filtered-indexes).
UNFINISHED_FILTER = "[Status] IN (" + ", ".join(f"'{s}'" for s in status.UNFINISHED) + ")"


# The filter of the finished lists' index (IX_<Queue>_FinishedByStatus), word for word, as
# UNFINISHED_FILTER is the health index's: stated by a list of a finished state by update.
FINISHED_FILTER = "[Status] IN (" + ", ".join(f"'{s}'" for s in status.FINISHED) + ")"


def _conditions(where: Filter, finished_index: bool) -> tuple[list[str], list[Any]]:
    """The predicates of ``where``'s set, its page aside, and their parameters;
    ``finished_index``: a finished state states the finished lists' index's filter."""
    clauses, params = [], []
    if where.status:
        clauses.append("[Status] = CAST(? AS VARCHAR(20))")  # dbo.QueueState
        params.append(where.status)
        if where.status in status.UNFINISHED:
            clauses.append(UNFINISHED_FILTER)
        elif where.status in status.FINISHED and finished_index:
            clauses.append(FINISHED_FILTER)
    if where.type:
        clauses.append("[Type] = CAST(? AS VARCHAR(50))")  # dbo._Type
        params.append(where.type)
    if where.error:
        clauses.append("Error LIKE ? ESCAPE '\\'")
        params.append(f"%{_escape_like(where.error)}%")
    for search, value in where.searches():
        clauses.append(f"[{search.column}] = CAST(? AS {search.sql_type})")
        params.append(value)
        if search.index_filter:
            clauses.append(search.index_filter)
    return clauses, params


def list_sql(queue: str, where: Filter, limit: int) -> tuple[str, list[Any]]:
    """The keyset query of an item list's page and its parameters, in the order it is read
    (a page read backward comes last row first). In key order a finished state's list does
    not state the finished index's filter: that index holds the state by update, and the
    queue read in key order stops at the page where the state is common."""
    clauses, params = _conditions(where, finished_index=where.by_update)
    descending = where.newest_first != where.backward
    past = "<" if descending else ">"
    if where.by_update:
        # (UpdatedAt, EnqueuedAt) past the row's: the first predicate bounds the seek, the
        # second passes over the rows of the same UpdatedAt up to the row itself.
        updated, key = ((where.after_updated, where.after) if where.after is not None
                        else (where.before_updated, where.before))
        if key is not None:
            clauses.append(f"UpdatedAt {past}= {KEY} AND (UpdatedAt {past} {KEY} OR EnqueuedAt {past} {KEY})")
            params += [updated, updated, key]
    else:
        key = where.after if where.after is not None else where.before
        if key is not None:
            clauses.append(f"EnqueuedAt {past} {KEY}")
            params.append(key)
    condition = f" WHERE {' AND '.join(clauses)}" if clauses else ""
    order = "DESC" if descending else "ASC"
    by = f"UpdatedAt {order}, EnqueuedAt {order}" if where.by_update else f"EnqueuedAt {order}"
    columns = ", ".join(f"[{c}]" for c in LISTED)
    sql = f"SELECT TOP ({int(limit)}) {columns} FROM {view(queue)}{condition} ORDER BY {by};"
    return sql, params


def count_sql(queue: str, where: Filter, cap: int) -> tuple[str, list[Any]]:
    """The count of ``where``'s set, up to ``cap`` + 1 items: it reads no more than that many
    of them, in any order, through the index that holds them (a finished state's: the finished
    lists' index, whatever the list's order), whatever the set holds."""
    clauses, params = _conditions(where, finished_index=True)
    condition = f" WHERE {' AND '.join(clauses)}" if clauses else ""
    return (f"SELECT COUNT(*) AS Items FROM (SELECT TOP ({int(cap) + 1}) 1 AS Item "
            f"FROM {view(queue)}{condition}) AS Counted;", params)


def update_order_served(where: Filter) -> bool:
    """Whether an index serves ``where`` by update: a state (the finished lists' index, or the
    health index's state read whole) or a search (the key's items read whole). With neither,
    it would read and sort every item of the queue: the list is shown by key instead."""
    return bool(where.status or where.searches())


def reading_note(where: Filter) -> str | None:
    """What reading ``where``'s page costs, where that is not one seek that stops after the
    page; None where it is."""
    if where.by_update and where.searches():
        return ("Ordered by last update, a search reads every item with that key and sorts "
                "them: the key's index holds them by key.")
    if where.by_update and where.status in status.UNFINISHED:
        return (f"Ordered by last update, a list of {where.status} items reads all of them and "
                f"sorts them: the health index holds them by key, so its cost grows with the "
                f"{where.status} backlog.")
    if not where.by_update and where.status in status.FINISHED and not where.searches():
        return (f"In key order, a list of {where.status} items reads the queue from the "
                f"{'newest' if where.newest_first else 'oldest'} key until it has a page: a long "
                f"read where they are rare. Ordered by last update it is one seek.")
    if where.error:
        return ("Text in Error is looked for in each item read in order until a page is full: a "
                "rare text reads much of the queue.")
    return None


# -- stuck work (relq/dashboard/stuck.py) ----------------------------------------------------
# The items in Processing and who holds them, from the worker view (what QueueAdmin reads), each
# read one bounded read of the queue's lease index, IX_<Queue>_Lease: keyed LeaseUntil (then the
# clustered key, EnqueuedAt, as every nonclustered index is), including LockedBy, filtered to
# [Status] = 'Processing'. Each read states that filter word for word, as the item lists state
# the health index's (UNFINISHED_FILTER), and reads in the index's order, LeaseUntil then
# EnqueuedAt, so that the first rows are the items longest past their lease and TOP stops the
# read after them: no sort, and nothing but the items in flight read (as many as there are
# workers' slots times their batch). The first page reads from the index's first entry (an
# ordered scan that TOP stops); a page past a row seeks to it.
# The columns the index lacks (Type, StartedAt, ...) are looked up for the rows read only. Both
# reads carry OPTION (RECOMPILE): under the database option PARAMETERIZATION FORCED a literal
# becomes a parameter, and a predicate on a parameter cannot match a filtered index; a statement
# with the RECOMPILE hint is one that forced parameterization leaves alone ("Forced
# Parameterization",
# https://learn.microsoft.com/previous-versions/sql/sql-server-2008-r2/ms175037(v=sql.105)),
# at the cost of a compile of a small query per page. "Past its lease" is QueueHealth_V's:
# LeaseUntil < SYSUTCDATETIME(); each read returns its SYSUTCDATETIME() as ReadAt, so that how
# long past is the database's figure, not the web server's clock's.

HELD = ("EnqueuedAt", "Type", "AttemptNum", "Step", "StartedAt", "LockedBy", "LeaseUntil")
HOLDER = ("LockedBy", "Items", "PastLease", "HeldSince", "OldestLease")
LEASE_FILTER = "[Status] = 'Processing'"  # IX_<Queue>_Lease's filter, word for word


@dataclass(frozen=True)
class LeasePlace:
    """A row's place in the lease order: its LeaseUntil (None: it has none) and its key."""

    lease_until: datetime | None
    key: datetime


def processing_sql(queue: str, after: LeasePlace | None, limit: int) -> tuple[str, list[Any]]:
    """The read of a page of a queue's items in Processing, in lease order, and its parameters."""
    clauses, params = [LEASE_FILTER], []
    if after is not None and after.lease_until is not None:
        # (LeaseUntil, EnqueuedAt) past the row's, as two ranges of the index's key (LeaseUntil,
        # then EnqueuedAt, which a non-unique index carries as a key column): the row's lease and
        # a later key, then a later lease. The values are the plan's own (RECOMPILE), so the seek
        # starts at the row even where a batch claim gave hundreds of items one LeaseUntil.
        clauses.append(f"((LeaseUntil = {KEY} AND EnqueuedAt > {KEY}) OR LeaseUntil > {KEY})")
        params += [after.lease_until, after.key, after.lease_until]
    elif after is not None:  # past a row without a lease: the rest of those, then every leased one
        clauses.append(f"(LeaseUntil IS NOT NULL OR EnqueuedAt > {KEY})")
        params.append(after.key)
    columns = ", ".join(f"[{c}]" for c in HELD)
    return (f"SELECT TOP ({int(limit)}) {columns}, SYSUTCDATETIME() AS ReadAt FROM {view(queue)} "
            f"WHERE {' AND '.join(clauses)} ORDER BY LeaseUntil ASC, EnqueuedAt ASC OPTION (RECOMPILE);",
            params)


def holders_sql(queue: str, cap: int) -> tuple[str, list[Any]]:
    """Who holds what: the first ``cap`` items in Processing in lease order (the same read as the
    first page's), counted per LockedBy, the oldest lease first."""
    return (f"WITH Held AS (SELECT TOP ({int(cap)}) LockedBy, LeaseUntil, StartedAt FROM {view(queue)} "
            f"WHERE {LEASE_FILTER} ORDER BY LeaseUntil ASC, EnqueuedAt ASC) "
            "SELECT LockedBy, COUNT(*) AS Items, COUNT(CASE WHEN LeaseUntil < SYSUTCDATETIME() THEN 1 END) "
            "AS PastLease, MIN(StartedAt) AS HeldSince, MIN(LeaseUntil) AS OldestLease, "
            "SYSUTCDATETIME() AS ReadAt FROM Held GROUP BY LockedBy "
            "ORDER BY MIN(LeaseUntil) ASC, LockedBy ASC OPTION (RECOMPILE);", [])


# -- /metrics' counters (relq.dashboard.metrics keeps them) --------------------------------
# A scrape reads the attempts that started, and the items enqueued, since the bound the scrape
# before set (``since``), from two views QueueMonitor may read (dbo.QueueAttemptOutcome_V,
# dbo.QueueItemKey_V), as one range seek per queue, aggregated in the database; and the
# attempts that left that window while they ran, by their StartedAt. relq/dashboard/metrics.py
# says how the counters follow from these figures, and what that costs.

# The outcomes that count, and how many per counter: an attempt that ended otherwise (released
# unworked, Pending; cancelled) counts nowhere.
COUNTED = ("Completed", "Failed", "Error")
# The duration histogram's buckets, in milliseconds (dbo.Duration), 5 ms to 5 min; a duration
# above the last is in +Inf only. The bucket read in SQL and in Python comes from this list.
BUCKETS_MS = (5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000, 120000, 300000)
# How many StartedAt values one read of followed attempts names: a list is padded to the next of
# these sizes (repeating its last value), so that a few plans serve every read.
FOLLOW_SIZES = (8, 64, 512)


def bucket_of(duration_ms: int) -> int:
    """The index of the first bucket that holds ``duration_ms`` (len(BUCKETS_MS): above all)."""
    return next((n for n, top in enumerate(BUCKETS_MS) if duration_ms <= top), len(BUCKETS_MS))


@dataclass(frozen=True, order=True)
class AttemptKey:
    """An attempt, named as its table's clustered key names it, with its queue."""

    queue: str
    enqueued_at: datetime
    started_at: datetime


@dataclass(frozen=True)
class AttemptRow:
    """An attempt as dbo.QueueAttemptOutcome_V has it."""

    key: AttemptKey
    outcome: str | None  # None while it runs
    duration_ms: int | None


@dataclass(frozen=True)
class Ended:
    """The attempts of one queue that ended with one outcome, their duration in one bucket
    (None: no duration known), started since ``since``; ``*_past_bound``: of those, the ones
    started at or after the bound."""

    queue: str
    outcome: str
    bucket: int | None
    attempts: int
    attempts_past_bound: int
    duration_ms: int
    duration_ms_past_bound: int


@dataclass(frozen=True)
class CounterReading:
    """One scrape's read. ``bound``: the later of now less the window and ``since``, in whole
    microseconds (the next scrape's ``since``); ``leaving``: the attempts started in
    [since, bound) that still run; ``enqueued``: per queue, the items enqueued since ``since``
    and, of those, at or after the bound; ``followed``: the rows that share a StartedAt with
    an attempt asked about (the others are not asked about and are left alone)."""

    since: datetime
    bound: datetime
    ended: list[Ended]
    leaving: list[AttemptKey]
    enqueued: dict[str, tuple[int, int]]
    followed: list[AttemptRow]


def _bucket_sql(column: str) -> str:
    cases = " ".join(f"WHEN {column} <= {top} THEN {n}" for n, top in enumerate(BUCKETS_MS))
    return f"CASE WHEN {column} IS NULL THEN NULL {cases} ELSE {len(BUCKETS_MS)} END"


_OUTCOMES = ", ".join(f"'{o}'" for o in COUNTED)
# One batch, one statement per view. The views are read by the parameter (``since``), never
# by an expression, so that each branch's predicate is the start of a range seek (the views'
# headers say why it reaches every branch); the bound is only compared with rows read. Each
# view is read once, so that an attempt is seen either ended or running, never both: the
# running ones that leave the window are their own groups, one per attempt.
COUNTER_BATCH = f"""SET NOCOUNT ON;
DECLARE @Bound DATETIME2(7) = CAST(DATEADD(MILLISECOND, -CAST(? AS INT), SYSUTCDATETIME()) AS DATETIME2(6));
IF @Bound < {KEY} SET @Bound = {KEY};
SELECT @Bound AS Bound;
WITH Attempts AS (
    SELECT
        a.[Queue],
        a.Outcome,
        {_bucket_sql("a.Duration")} AS Bucket,
        CASE WHEN a.Outcome IS NULL AND a.StartedAt < @Bound THEN a.EnqueuedAt END AS LeavingEnqueuedAt,
        CASE WHEN a.Outcome IS NULL AND a.StartedAt < @Bound THEN a.StartedAt END AS LeavingStartedAt,
        CASE WHEN a.StartedAt >= @Bound THEN 1 ELSE 0 END AS PastBound,
        a.Duration
    FROM dbo.QueueAttemptOutcome_V AS a
    WHERE a.StartedAt >= {KEY} AND (a.Outcome IS NULL OR a.Outcome IN ({_OUTCOMES}))
)
SELECT
    t.[Queue],
    t.Outcome,
    t.Bucket,
    t.LeavingEnqueuedAt,
    t.LeavingStartedAt,
    COUNT(*) AS Attempts,
    SUM(t.PastBound) AS AttemptsPastBound,
    ISNULL(SUM(t.Duration), 0) AS DurationMs,
    ISNULL(SUM(CASE WHEN t.PastBound = 1 THEN t.Duration END), 0) AS DurationMsPastBound
FROM Attempts AS t
GROUP BY t.[Queue], t.Outcome, t.Bucket, t.LeavingEnqueuedAt, t.LeavingStartedAt;
SELECT
    k.[Queue],
    COUNT(*) AS Items,
    COUNT(CASE WHEN k.EnqueuedAt >= @Bound THEN 1 END) AS ItemsPastBound
FROM dbo.QueueItemKey_V AS k
WHERE k.EnqueuedAt >= {KEY}
GROUP BY k.[Queue];"""
# Before the first scrape: where its window starts.
FIRST_SINCE = "SELECT CAST(DATEADD(MILLISECOND, -CAST(? AS INT), SYSUTCDATETIME()) AS DATETIME2(6)) AS Since;"


def counter_batch(since: datetime, window_ms: int) -> tuple[str, list[Any]]:
    """The batch of a scrape's counter read and its parameters."""
    return COUNTER_BATCH, [int(window_ms), since, since, since, since]


def followed_batches(followed: Sequence[AttemptKey]) -> list[tuple[str, list[Any]]]:
    """The reads of the attempts ``followed`` (each a seek of the Started index per StartedAt
    named), each naming at most the largest of FOLLOW_SIZES distinct times."""
    starts = sorted({k.started_at for k in followed})
    most = FOLLOW_SIZES[-1]
    batches = []
    for at in range(0, len(starts), most):
        chunk = starts[at:at + most]
        size = next(s for s in FOLLOW_SIZES if s >= len(chunk))
        chunk += [chunk[-1]] * (size - len(chunk))
        named = ", ".join([KEY] * size)
        batches.append((f"SELECT a.[Queue], a.EnqueuedAt, a.StartedAt, a.Outcome, a.Duration "
                        f"FROM dbo.QueueAttemptOutcome_V AS a WHERE a.StartedAt IN ({named});", chunk))
    return batches


def counter_reading(conn: Any, since: datetime | None, window_ms: int,
                    followed: Sequence[AttemptKey]) -> CounterReading:
    """Run a scrape's counter read on ``conn`` (:class:`SqlStore` and the live tests)."""
    cursor = conn.cursor()
    try:
        if since is None:
            since = db.query(cursor, FIRST_SINCE, int(window_ms))[0][0]
        sql, params = counter_batch(since, window_ms)
        sets, _ = db.result_sets(cursor, sql, *params)
        rows: list[tuple] = []
        for sql, params in followed_batches(followed):
            rows += db.query(cursor, sql, *params)
    finally:
        cursor.close()
    (bound,), groups, items = sets[0][0], sets[1], sets[2]
    ended = [Ended(q, outcome, bucket, int(n), int(n_past), int(ms), int(ms_past))
             for q, outcome, bucket, _, _, n, n_past, ms, ms_past in groups if outcome is not None]
    leaving = [AttemptKey(q, enqueued, started)
               for q, outcome, _, enqueued, started, *_ in groups if outcome is None and started is not None]
    return CounterReading(
        since, bound, ended, leaving, {q: (int(n), int(n_past)) for q, n, n_past in items},
        [AttemptRow(AttemptKey(q, enqueued, started), outcome, None if ms is None else int(ms))
         for q, enqueued, started, outcome, ms in rows])


# -- through an outage: the connection replaced, a read made again, an action made once ----
# A connection is gone when the link to the server failed (SQLSTATE class 08: 08S01
# "Communication link failure", ODBC's error codes,
# https://learn.microsoft.com/sql/odbc/reference/appendixes/appendix-a-odbc-error-codes;
# 08S02, Microsoft's driver's "SMux Provider: Physical connection is not usable", as its
# users meet it after a failover, https://github.com/microsoft/msphpsql/issues/762), when
# Microsoft's driver found it broken and could not restore it (IMC01-IMC06, "Connection
# Resiliency in the Windows ODBC Driver", https://learn.microsoft.com/sql/connect/odbc/windows/
# connection-resiliency-in-the-windows-odbc-driver), or when the session ended: error 0 (what
# the first call after a restart meets, "Unknown error" or "A severe error occurred"), 596
# (killed), an error with neither state nor number (pyodbc's closed connection); relq.db's
# SqlError.broken names those. Microsoft's advice for such a failure: "Do not directly retry a
# SQL SELECT statement that failed with a transient error. Instead, establish a fresh
# connection, and then retry the SELECT"; an UPDATE is made again only where the retry logic
# "ensure[s] that either the entire database transaction finished or that the entire
# transaction is rolled back" (https://learn.microsoft.com/azure/azure-sql/database/
# troubleshoot-common-connectivity-issues, "Principles for retry"). A control procedure commits
# before its answer travels back, and a link that fails after the commit loses the answer, not
# the change: ODBC's own commit call says "it cannot be determined whether the requested COMMIT
# or ROLLBACK occurred before the failure" (SQLSTATE 08007, and "Suspended State": "it was
# possible that the transaction had been successfully committed on the server, but the driver
# on the client had not been notified (for example, because a network error occurred)",
# https://learn.microsoft.com/sql/odbc/reference/syntax/sqlendtran-function). So a read whose
# connection was gone is made once more at once, on a new connection; an action is never made
# again by the dashboard: the page says it may or may not have run and shows the item as it is.
# A timeout (HYT00, HYT01) ends the connection too (relq.db calls it broken), but the server
# was there: the read is not made again, so a page blocked behind someone's transaction waits
# once, not twice. A connect that fails is not tried again for RECONNECT_PAUSE_S (Microsoft's
# advice is to wait 5 seconds before a retry, same page, "Interval increase between retries"):
# the pages asked meanwhile fail at once, and the log has one line per connect tried.

RECONNECT_PAUSE_S = 5.0
log = logging.getLogger("relq.dashboard")


class Unreachable(RelqError):
    """No connection could be opened: nothing was sent. Its text is the connect's own line
    (server and login, never the password), for the log, not for a page. ``tried``: a connect
    was tried now (not refused for RECONNECT_PAUSE_S after one that failed); ``first``: no
    connection was ever opened before (a dashboard starting: its caller says so, in one line)."""

    def __init__(self, line: str, *, tried: bool = True, first: bool = False) -> None:
        super().__init__(line)
        self.line, self.tried, self.first = line, tried, first


class CallLost(RelqError):
    """A control procedure's connection broke before its answer came: the call may have
    committed, or not."""

    def __init__(self, error: db.SqlError) -> None:
        super().__init__(f"the connection broke before the answer came ({error})")
        self.error = error


def gone(exc: BaseException) -> bool:
    """Whether ``exc`` says the connection it came on is done for."""
    return isinstance(exc, db.SqlError) and (exc.broken or (exc.sqlstate or "").startswith("IMC"))


def outage_of(exc: BaseException) -> str | None:
    """What a failure says of the database: ``unreachable`` (no connection could be opened),
    ``lost`` (an action's connection broke before its answer), ``timeout`` (a read was stopped,
    the server being there), ``broken`` (a connection was gone); None: the server answered."""
    if isinstance(exc, Unreachable):
        return "unreachable"
    if isinstance(exc, CallLost):
        return "lost"
    if isinstance(exc, db.SqlError) and gone(exc):
        return "timeout" if exc.sqlstate in ("HYT00", "HYT01") else "broken"
    return None


# The methods of the contract that change items: made once, never again (through_outages).
CHANGES = ("act", "control", "purge_item")


def contract() -> list[str]:
    """The methods of the :class:`Store` contract: each a read, but those in CHANGES."""
    return [name for name, value in vars(Store).items() if callable(value) and not name.startswith("_")]


def through_outages(cls: type) -> type:
    """``cls`` (a Store) with each read made again once when its connection was gone, and
    each change (CHANGES) made once, its lost connection a :class:`CallLost`; every failure that says the
    database is away logs one line. A read's method must open a new connection when called
    after its connection broke (as SqlStore's does)."""
    for name in contract():
        method = getattr(cls, name, None)
        if method is not None:
            setattr(cls, name, _act_once(method) if name in CHANGES else _read_again(method))
    return cls


def _read_again(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def read(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except RelqError as exc:
            if outage_of(exc) != "broken":
                _note(exc)
                raise
            log.warning("dashboard: the connection to the database broke (%s): reading again on a new "
                        "connection", exc)
        try:
            return method(self, *args, **kwargs)
        except RelqError as exc:
            _note(exc, again=True)
            raise

    return read


def _act_once(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def act(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except db.SqlError as exc:
            if gone(exc):  # the caller logs it, with who did what
                raise CallLost(exc) from exc
            raise

    return act


def _note(exc: RelqError, again: bool = False) -> None:
    """The log line of a read's failure that says the database is away: none for a refusal, nor
    for a connect not tried (RECONNECT_PAUSE_S), nor for a dashboard's first connect."""
    kind = outage_of(exc)
    where = " on the new connection too" if again else ""
    if isinstance(exc, Unreachable):
        if exc.tried and not exc.first:
            log.warning("dashboard: cannot reach the database: %s", exc)
    elif kind == "timeout":
        log.warning("dashboard: a read was stopped after waiting too long%s (%s): the next one opens a new "
                    "connection", where, exc)
    elif kind == "broken":
        log.warning("dashboard: the connection to the database broke%s (%s)", where, exc)


@through_outages
class SqlStore:
    """:class:`Store` on one connection, opened by ``connect`` when first needed and again
    after the server dropped it; a read whose connection was gone is made again on a new one,
    an action never (:func:`through_outages`). One request at a time uses it (a lock): a
    dashboard's load is a few people and a scraper. ``clock``: seconds, for RECONNECT_PAUSE_S."""

    def __init__(self, connect: Callable[[], Any], clock: Callable[[], float] = time.monotonic) -> None:
        self._connect = connect
        self._conn: Any = None
        self._lock = threading.Lock()
        self._clock = clock
        self._opened = False  # a connection was opened once
        self._refused: tuple[float, str] | None = None  # when a connect last failed, and its line
        self._login: str | None = None  # ORIGINAL_LOGIN(), once read (login)

    @contextmanager
    def _connection(self) -> Iterator[Any]:
        with self._lock:
            if self._conn is None:
                self._conn = self._open()
            try:
                yield self._conn
            except db.SqlError as exc:
                if gone(exc):  # gone, or timed out: open a new one next time
                    self._drop()
                raise

    def _open(self) -> Any:
        if self._refused is not None and self._clock() - self._refused[0] < RECONNECT_PAUSE_S:
            raise Unreachable(self._refused[1], tried=False)
        try:
            conn = self._connect()
        except RelqError as exc:
            self._refused = (self._clock(), str(exc))
            raise Unreachable(str(exc), first=not self._opened) from exc
        self._opened, self._refused = True, None
        return conn

    def _drop(self) -> None:
        with suppress(Exception):  # closing a connection the server dropped may fail too
            self._conn.close()
        self._conn = None

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._drop()

    # -- dead letters (relq/dashboard/deadletters.py): two reads, and two actions made once ------

    def dead_letters(self, page: LetterPage, limit: int) -> list[dict[str, Any]]:
        sql, params = dead_letters_sql(page, limit)
        rows = self._rows(sql, *params)
        return rows[::-1] if page.backward else rows

    def dead_letter_counts(self) -> list[dict[str, Any]]:
        return self._rows(DEAD_LETTER_COUNTS)

    def replay_dead_letter(self, dead_letter_id: int) -> dict[str, Any]:
        with self._connection() as conn:
            result = db.call(conn, "dbo.Replay_DeadLetter_trx", DeadLetterId=int(dead_letter_id))
        return dict(zip(result.columns[0], result.result_sets[0][0], strict=True))

    def delete_dead_letter(self, dead_letter_id: int) -> None:
        with self._connection() as conn:
            db.call(conn, "dbo.Delete_DeadLetter_trx", DeadLetterId=int(dead_letter_id))

    # -- schedules (relq/dashboard/schedules.py): the server's clock and dbo.QueueSchedule_V ----------

    def schedules(self) -> tuple[datetime, list[dict[str, Any]]]:
        with self._connection() as conn:
            cursor = conn.cursor()
            try:
                sets, columns = db.result_sets(cursor, SCHEDULES, context="dbo.QueueSchedule_V")
            finally:
                cursor.close()
        return sets[0][0][0], [dict(zip(columns[1], row, strict=True)) for row in sets[1]]

    # -- batches (relq/dashboard/batches.py): two reads of dbo.QueueBatch_V ------------------------

    def batches(self, limit: int) -> list[dict[str, Any]]:
        running = self._rows(BATCHES, limit)
        newest = self._rows(batches_module.RECENT, limit)
        seen = {r["BatchID"] for r in running}
        return sorted(running + [r for r in newest if r["BatchID"] not in seen],
                      key=lambda r: r["BatchID"], reverse=True)

    def _rows(self, sql: str, *params: Any) -> list[dict[str, Any]]:
        with self._connection() as conn:
            cursor = conn.cursor()
            try:
                sets, columns = db.result_sets(cursor, sql, *params)
            finally:
                cursor.close()
        return [dict(zip(columns[0], row, strict=True)) for row in sets[0]] if sets else []

    def permissions(self, wanted: list[tuple[str, str]]) -> list[bool]:
        # HAS_PERMS_BY_NAME: 1 when the login holds the permission (granted to it or a role
        # of it, or implied, as for dbo), 0 when not, NULL when the object cannot be found
        # (https://learn.microsoft.com/sql/t-sql/functions/has-perms-by-name-transact-sql).
        if not wanted:
            return []
        checks = ", ".join(f"HAS_PERMS_BY_NAME(?, N'OBJECT', ?) AS p{n}" for n in range(len(wanted)))
        params = [value for pair in wanted for value in pair]
        with self._connection() as conn:
            cursor = conn.cursor()
            try:
                row = db.query(cursor, f"SELECT {checks};", *params)[0]
            finally:
                cursor.close()
        return [held == 1 for held in row]

    def health(self) -> list[status.QueueHealth]:
        with self._connection() as conn:
            return status.read(conn)

    def login(self) -> str | None:
        # ORIGINAL_LOGIN(), not SUSER_SNAME(): the login that opened the session, even inside an
        # EXECUTE AS context switch, where SUSER_SNAME() names the impersonated one; "useful in
        # auditing the identity of the original connecting context"
        # (https://learn.microsoft.com/sql/t-sql/functions/original-login-transact-sql). Every
        # connection opens with the same connection string, so one read serves them all.
        if self._login is None:
            self._login = self._rows("SELECT ORIGINAL_LOGIN() AS Login;")[0]["Login"]
        return self._login

    def columns(self, queue: str) -> list[Column]:
        rows = self._rows("SELECT c.name AS name, TYPE_NAME(c.user_type_id) AS type FROM sys.columns AS c "
                          "WHERE c.object_id = OBJECT_ID(?) ORDER BY c.column_id;", view(queue))
        return [Column(r["name"], r["type"] or "") for r in rows]

    def items(self, queue: str, where: Filter, limit: int) -> list[dict[str, Any]]:
        sql, params = list_sql(queue, where, limit)
        rows = self._rows(sql, *params)
        return rows[::-1] if where.backward else rows

    def count(self, queue: str, where: Filter, cap: int) -> int:
        sql, params = count_sql(queue, where, cap)
        return int(self._rows(sql, *params)[0]["Items"])

    def item(self, queue: str, key: datetime, columns: list[str]) -> dict[str, Any] | None:
        names = ", ".join(f"[{c.replace(']', ']]')}]" for c in columns)
        rows = self._rows(f"SELECT {names} FROM {view(queue)} WHERE EnqueuedAt = {KEY};", key)
        return rows[0] if rows else None

    def attempts(self, queue: str, key: datetime) -> list[dict[str, Any]]:
        columns = ", ".join(f"[{c}]" for c in ATTEMPT)
        return self._rows(f"SELECT {columns} FROM dbo.QueueAttempt_V WHERE [Queue] = CAST(? AS VARCHAR(128)) "
                          f"AND EnqueuedAt = {KEY} "
                          "ORDER BY StartedAt DESC;", _name(queue), key)

    def act(self, queue: str, action: str, key: datetime, token: datetime,
            scheduled_for: datetime | None = None) -> dict[str, Any]:
        params: dict[str, Any] = {"EnqueuedAt": key, "UpdatedAt": token}
        if action in ("Retry", "Resume", "Reschedule"):
            params["ScheduledFor"] = scheduled_for
        with self._connection() as conn:
            result = db.call(conn, procedure(action, queue), **params)
        return dict(zip(result.columns[0], result.result_sets[0][0], strict=True))

    def control(self, action: str, queue: str, type_: str | None, reason: str | None,
                by: str | None) -> dict[str, Any]:
        if action not in QUEUE_ACTIONS:
            raise ValueError(f"not a queue control: {action!r}")
        with self._connection() as conn:
            if action == "Pause":
                return controls.pause(conn, queue, type_, reason or "", by)
            return controls.resume(conn, queue, type_, by)

    # -- bulk actions (relq.dashboard.bulk) ---------------------------------------------------

    def purge_item(self, queue: str, key: datetime, token: datetime) -> bool:
        # The exact mode: the item only if it is still finished and its UpdatedAt still the one
        # listed, passing over a row another session holds; in a transaction of its own.
        listed = json.dumps([{"EnqueuedAt": db.sql_value(key), "UpdatedAt": db.sql_value(token)}])
        with self._connection() as conn:
            result = db.call(conn, purge_procedure(queue), Keys=listed, BatchSize=1)
        return int(result.result_sets[0][0][0]) > 0

    # -- /metrics' counters ------------------------------------------------------------------

    def counter_reading(self, since: datetime | None, window_ms: int,
                        followed: Sequence[AttemptKey]) -> CounterReading:
        with self._connection() as conn:
            return counter_reading(conn, since, window_ms, followed)

    # -- stuck work (relq.dashboard.stuck) ----------------------------------------------------

    def processing(self, queue: str, after: LeasePlace | None, limit: int) -> list[dict[str, Any]]:
        sql, params = processing_sql(queue, after, limit)
        return self._rows(sql, *params)

    def holders(self, queue: str, cap: int) -> list[dict[str, Any]]:
        sql, params = holders_sql(queue, cap)
        return self._rows(sql, *params)
