"""SqlProcedures against a stand-in cursor: the worker view's row as the item, an item gone
from the view as Lost, and a report refused with a relq number (registered or not) as Lost."""

from __future__ import annotations

from datetime import datetime

import pytest

from relq import db
from relq.errors import Msg
from relq.worker.procedures import Claim, Lost, SqlProcedures
from tests.test_db import SAMPLE_UNREGISTERED, FakeConnection, FakeCursor, FakeError

KEY = datetime(2024, 1, 1, 0, 0, 0, 7)
CLAIM = Claim(KEY, KEY, KEY, 2)


def test_read_returns_the_worker_view_row_as_the_item() -> None:
    cursor = FakeCursor([(["EnqueuedAt", "Type", "Step", "EntityKey"], [(KEY, "CustomerSync", None, "C-1")])])
    item = SqlProcedures(FakeConnection(cursor), "SyncQueue").read(CLAIM)
    assert cursor.executed == ("SELECT * FROM dbo.Worker_SyncQueue_V WHERE EnqueuedAt = ?;",
                               ("2024-01-01T00:00:00.000007",))
    assert (item.type, item.step, item.attempt, item["EntityKey"]) == ("CustomerSync", None, 2, "C-1")
    assert cursor.closed


def test_read_of_an_item_gone_from_the_view_is_lost() -> None:
    cursor = FakeCursor([(["EnqueuedAt", "Type", "Step"], [])])
    with pytest.raises(Lost, match="is gone"):
        SqlProcedures(FakeConnection(cursor), "SyncQueue").read(CLAIM)


class RefusingCursor(FakeCursor):
    def __init__(self, message: str) -> None:
        super().__init__([])
        self.message = message

    def execute(self, sql, *params):
        raise FakeError("42000", self.message)


@pytest.mark.parametrize("message", [
    "[42000] [Microsoft][ODBC Driver 18 for SQL Server][SQL Server]relq: dbo.Modify_SyncQueue_utx: "
    "item 2024-01-01T00:00:00.0000070 was claimed again after this attempt's lease (735710) (SQLExecDirectW)",
    SAMPLE_UNREGISTERED,  # the same refusal on a server whose master lacks relq's messages
])
def test_a_report_refused_because_another_attempt_owns_the_item_is_lost(monkeypatch, message) -> None:
    monkeypatch.setattr(db, "_is_pyodbc_error", lambda exc, kind="Error": isinstance(exc, FakeError))
    with pytest.raises(Lost) as lost:
        SqlProcedures(FakeConnection(RefusingCursor(message)), "SyncQueue").report(CLAIM, "Completed")
    assert lost.value.number == Msg.TakenOver


def test_a_report_sends_when_a_released_item_is_due_again() -> None:
    due, token = datetime(2024, 1, 1, 0, 5), datetime(2024, 1, 1, 0, 0, 1)
    item = (["EnqueuedAt", "UpdatedAt", "LeaseUntil", "Status"], [(KEY, token, None, "Pending")])
    cursor = FakeCursor([item, (["return_code"], [(0,)])])
    claim, status = SqlProcedures(FakeConnection(cursor), "SyncQueue").report(
        CLAIM, "Pending", response="snoozed for 300 s", scheduled_for=due)
    sql, params = cursor.executed
    assert "EXEC @rc = dbo.Modify_SyncQueue_trx" in sql and "@ScheduledFor = ?" in sql
    assert params[-1] == "2024-01-01T00:05:00.000000"  # the last parameter, as relq sends a datetime
    assert (claim.token, status) == (token, "Pending")
