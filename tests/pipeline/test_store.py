"""relq.pipeline.store.SqlSession offline, on a scripted stand-in for a pyodbc
connection: what it sends (through the worker view only, object names from the
queue's name), how it streams a key range, retries a call that wrote nothing,
and turns a missing queue into one line."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from relq.errors import RelqError
from relq.pipeline import store
from relq.pipeline.store import FETCH_ROWS, ItemRejected, SqlSession

T0 = datetime(2026, 3, 1, 8, 0)


class ServerError(Exception):
    """Stands in for a pyodbc error (args: sqlstate, message), so that these tests need no
    unixODBC; relq.db recognises it through the patch below."""


def server_error(number: int, text: str) -> ServerError:
    return ServerError("42000", f"[42000] [FreeTDS][SQL Server]{text} ({number}) (SQLExecDirectW)")


class Cursor:
    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.description: Any = None
        self.rows: list[tuple] = []

    def execute(self, sql: str, *params: Any) -> None:
        self.conn.sent.append((sql, params))
        answer = self.conn.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        self.rows = list(answer)
        self.description = [("c",)]

    def fetchall(self) -> list[tuple]:
        self.conn.fetched.append(len(self.rows))
        rows, self.rows = self.rows, []
        return rows

    def fetchmany(self, size: int) -> list[tuple]:
        self.conn.fetched.append(size)
        rows, self.rows = self.rows[:size], self.rows[size:]
        return rows

    def nextset(self) -> bool:
        return False

    def close(self) -> None:
        self.conn.closed += 1


class Connection:
    def __init__(self, *answers: Any) -> None:
        self.answers = list(answers)
        self.sent: list[tuple[str, tuple]] = []
        self.fetched: list[int] = []
        self.closed = 0

    def cursor(self) -> Cursor:
        return Cursor(self)


@pytest.fixture(autouse=True)
def no_pause(monkeypatch) -> None:
    monkeypatch.setattr(store.time, "sleep", lambda seconds: None)


@pytest.fixture(autouse=True)
def server_errors(monkeypatch) -> None:
    monkeypatch.setattr(store.db, "_is_pyodbc_error", lambda exc, kind="Error": isinstance(exc, ServerError))


def job_row(n: int) -> tuple:
    return ("CustomerSync", T0, "Completed", None, 1, T0, T0, T0, 5, 0, None, f"d{n}", "", f"E-{n}", "{}",
            "w/1", None, "ok")


def test_a_key_range_is_streamed_a_fetch_at_a_time_through_the_worker_view() -> None:
    conn = Connection([job_row(n) for n in range(FETCH_ROWS * 2 + 5)])

    rows = SqlSession(conn).read_range("InvoiceExport", T0, T0, T0)
    first = next(rows)

    assert conn.fetched == [FETCH_ROWS]  # one fetch so far, not the whole range
    assert (first["EntityKey"], first["Status"]) == ("E-0", "Completed")
    assert len(list(rows)) == FETCH_ROWS * 2 + 4 and conn.closed == 1
    assert all(size == FETCH_ROWS for size in conn.fetched)
    sql, params = conn.sent[0]
    assert "FROM dbo.Worker_InvoiceExport_V AS v" in sql and "dbo.InvoiceExport " not in sql
    assert params == ("2026-03-01T08:00:00.000000",) * 3


def test_range_starts_are_numbered_on_the_server_through_the_worker_view() -> None:
    conn = Connection([(T0,), (T0.replace(hour=9),)])

    starts = SqlSession(conn).range_starts("Notification", T0, 50_000)

    assert starts == [T0, T0.replace(hour=9)]
    sql, params = conn.sent[0]
    assert "ROW_NUMBER() OVER (ORDER BY v.EnqueuedAt)" in sql and "dbo.Worker_Notification_V" in sql
    assert "dbo.Notification " not in sql and params[1] == 50_000


@pytest.mark.parametrize("number", [735709, 1205, 1222])
def test_an_enqueue_that_wrote_nothing_is_sent_again(number: int) -> None:
    done = [(T0, "CustomerSync", "E-1", 1, False), (T0, "CustomerSync", "E-2", 2, True)]
    conn = Connection(server_error(number, "busy"), server_error(number, "busy"), done)

    outcome = SqlSession(conn).enqueue("SyncQueue", [{"ItemNo": 1}, {"ItemNo": 2}])

    assert outcome == [(1, False), (2, True)]
    assert len(conn.sent) == 3 and conn.sent[0] == conn.sent[2]
    assert "DECLARE @Items dbo.SyncQueueItemList;" in conn.sent[0][0]
    assert "EXEC dbo.Add_SyncQueue_trx @Items = @Items;" in conn.sent[0][0]


def test_an_enqueue_gives_up_after_the_retries_and_never_retries_other_errors() -> None:
    conn = Connection(*[server_error(735709, "busy")] * store.RETRIES)
    with pytest.raises(store.db.SqlError, match="735709"):
        SqlSession(conn).enqueue("SyncQueue", [{"ItemNo": 1}])
    assert len(conn.sent) == store.RETRIES

    refused = "dbo.Add_SyncQueue_utx: item 2: Type is not one of dbo.SyncQueueType"
    conn = Connection(server_error(735707, refused))
    with pytest.raises(ItemRejected) as caught:
        SqlSession(conn).enqueue("SyncQueue", [{"ItemNo": 1}, {"ItemNo": 2}])
    assert (caught.value.item_no, caught.value.reason, len(conn.sent)) == (
        2, "Type is not one of dbo.SyncQueueType", 1)


def test_notifications_go_to_the_batch_procedure_in_its_list_type() -> None:
    conn = Connection([(T0, 1, False)])

    assert SqlSession(conn).enqueue("Notification", [{"ItemNo": 1}]) == [(1, False)]
    assert "DECLARE @Items dbo.Notification_ResetPasswordItemList;" in conn.sent[0][0]
    assert "EXEC dbo.Add_Notification_ResetPassword_Batch_trx @Items = @Items;" in conn.sent[0][0]


def test_a_queue_the_database_lacks_is_one_line() -> None:
    conn = Connection(server_error(208, "Invalid object name 'dbo.InvoiceExportType'."))

    with pytest.raises(RelqError) as caught:
        SqlSession(conn).job_types("InvoiceExport")

    assert str(caught.value) == (
        "queue InvoiceExport: this database has no such queue, or not all of its objects "
        "(SQL Server error 208: Invalid object name 'dbo.InvoiceExportType'.)")


LOCK = "relq.pipeline.archive:SyncQueue"


def test_the_archive_lock_is_the_sessions_never_waits_and_is_checked_before_the_purge() -> None:
    conn = Connection([(0,)], [("Exclusive",)], [])
    session = SqlSession(conn)

    assert session.try_lock(LOCK) is True
    assert session.holds_lock(LOCK) is True
    session.unlock(LOCK)

    lock_sql, params = conn.sent[0]
    assert "@LockOwner = 'Session'" in lock_sql and "@LockTimeout = 0" in lock_sql
    assert params == (LOCK,)
    assert "APPLOCK_MODE(N'public', ?, 'Session')" in conn.sent[1][0] and conn.sent[1][1] == (LOCK,)
    assert "sp_releaseapplock" in conn.sent[2][0]


def test_a_lock_held_elsewhere_is_not_granted_and_a_refused_call_is_its_own_error() -> None:
    # Another session holds it: -1 at once (@LockTimeout 0). The same session would be granted
    # again (session applocks are re-entrant), so that is never what -1 means.
    assert SqlSession(Connection([(-1,)])).try_lock(LOCK) is False
    with pytest.raises(RelqError, match=r"sp_getapplock refused the application lock .* returned -999"):
        SqlSession(Connection([(-999,)])).try_lock(LOCK)
    assert SqlSession(Connection([("NoLock",)])).holds_lock(LOCK) is False


def test_the_queue_name_is_the_databases_spelling_and_a_missing_queue_is_one_line() -> None:
    conn = Connection([("Worker_SyncQueue_V",)])
    assert SqlSession(conn).queue_name("SYNCQUEUE") == "SyncQueue"
    sql, params = conn.sent[0]
    assert "OBJECT_NAME(COALESCE(OBJECT_ID(N'dbo.Worker_' + ? + N'_V', N'V')" in sql
    assert params == ("SYNCQUEUE", "SYNCQUEUE")
    assert SqlSession(Connection([("Add_InvoiceExport_trx",)])).queue_name("INVOICEEXPORT") == "InvoiceExport"
    with pytest.raises(RelqError, match=r"^queue Nope: this database has no such queue"):
        SqlSession(Connection([(None,)])).queue_name("Nope")
    conn = Connection()
    assert SqlSession(conn).queue_name("notification") == "Notification" and conn.sent == []
