"""relq.batches offline: the calls it makes (procedure, parameters, the items' JSON), the rows
of dbo.QueueBatch_V it reads, and the status line. The rules themselves are the procedures':
tSQLt classes and tests/live/test_batches.py."""

from __future__ import annotations

import json
from datetime import datetime

import pytest

from relq import batches, db
from relq.batches import Batch, Job
from tests.test_db import FakeConnection, FakeCursor


def test_open_batch_names_its_callback_and_returns_the_key():
    cursor = FakeCursor([(["BatchID", "OpenedAt"], [(42, datetime(2026, 1, 1))]), (["return_code"], [(0,)])])

    batch = batches.open_batch(FakeConnection(cursor), "SyncQueue", "ImportDone", payload={"import": 7},
                               name="import 7")

    assert batch == 42
    sql, params = cursor.executed
    assert "EXEC @rc = dbo.Open_QueueBatch_trx @CallbackQueue = ?, @CallbackType = ?" in sql
    assert params == ("SyncQueue", "ImportDone", None, '{"import": 7}', "import 7")


def test_open_batch_passes_a_json_text_as_it_is():
    cursor = FakeCursor([(["BatchID", "OpenedAt"], [(1, None)]), (["return_code"], [(0,)])])

    batches.open_batch(FakeConnection(cursor), "SyncQueue", "ImportDone", payload='{"a": 1}')

    assert cursor.executed[1][3] == '{"a": 1}'


def test_add_jobs_sends_the_items_and_the_batch():
    columns = ["EnqueuedAt", "Type", "EntityKey", "ItemNo", "IsDuplicate"]
    cursor = FakeCursor([(columns, [("k", "T", "C-1", 1, False)])])
    due = datetime(2026, 1, 2, 3, 4, 5)

    jobs = [Job("CustomerSync", "C-1", {"n": 1}),
            Job("CustomerSync", "C-2", scheduled_for=due, priority=5, dedup_key="d")]

    rows = batches.add_jobs(FakeConnection(cursor), "SyncQueue", jobs, batch_id=9)

    assert rows == [("k", "T", "C-1", 1, False)]
    sql, (items, batch_id) = cursor.executed
    assert "DECLARE @Items dbo.SyncQueueItemList;" in sql
    assert "EXEC dbo.Add_SyncQueue_trx @Items = @Items, @BatchID = ?;" in sql
    assert batch_id == 9
    assert json.loads(items) == [
        {"ItemNo": 1, "Type": "CustomerSync", "EntityKey": "C-1", "Payload": '{"n": 1}', "ScheduledFor": None,
         "Priority": None, "GroupKey": None, "DedupKey": None},
        {"ItemNo": 2, "Type": "CustomerSync", "EntityKey": "C-2", "Payload": None,
         "ScheduledFor": "2026-01-02T03:04:05", "Priority": 5, "GroupKey": None, "DedupKey": "d"},
    ]
    assert cursor.closed


@pytest.mark.parametrize("queue", ["Sync Queue", "SyncQueue;DROP", "", "1Queue"])
def test_add_jobs_refuses_a_queue_name_that_is_no_identifier(queue):
    with pytest.raises(ValueError, match="not a queue name"):
        batches.add_jobs(FakeConnection(FakeCursor([])), queue, [Job("T", "C")])


@pytest.mark.parametrize("count", [0, batches.MAX_ITEMS + 1])
def test_add_jobs_refuses_a_call_of_no_jobs_or_too_many(count):
    with pytest.raises(ValueError, match="1 to 4000 jobs"):
        batches.add_jobs(FakeConnection(FakeCursor([])), "SyncQueue", [Job("T", "C")] * count)


def test_seal_batch_calls_the_seal():
    cursor = FakeCursor([(["BatchID"], [(3,)]), (["return_code"], [(0,)])])

    batches.seal_batch(FakeConnection(cursor), 3)

    sql, params = cursor.executed
    assert "EXEC @rc = dbo.Seal_QueueBatch_trx @BatchID = ?;" in sql
    assert params == (3,)


ROW = (5, "import 5", "Sealed", 10, 4, 1, 2, 1, 0, 8, 2, "SyncQueue", "ImportDone",
       datetime(2026, 1, 1), datetime(2026, 1, 1, 0, 1), None, None)


def test_recent_reads_the_view_newest_first():
    cursor = FakeCursor([(list(batches.COLUMNS), [ROW])])

    [batch] = batches.recent(FakeConnection(cursor), limit=7)

    sql, params = cursor.executed
    assert "FROM dbo.QueueBatch_V AS v ORDER BY v.BatchID DESC" in sql and params == (7,)
    assert batch == Batch(5, "import 5", "Sealed", 10, 4, 1, 2, 1, 0, 8, 2, "SyncQueue", "ImportDone",
                          datetime(2026, 1, 1), datetime(2026, 1, 1, 0, 1), None, None)
    assert batch.percent == 80


def _batch(state: str, total: int, done: int) -> Batch:
    return Batch(1, None, state, total, done, 0, 0, 0, 0, done, total - done, "SyncQueue", "Done")


@pytest.mark.parametrize(("state", "total", "done", "percent"), [
    ("Open", 0, 0, 0), ("Sealed", 0, 0, 100), ("Sealed", 3, 1, 33), ("Finished", 3, 3, 100)])
def test_percent_is_the_share_done(state, total, done, percent):
    assert _batch(state, total, done).percent == percent


def test_status_line_counts_running_batches_and_what_they_have_left():
    line = batches.status_line([_batch("Open", 5, 1), _batch("Sealed", 10, 7), _batch("Reopened", 4, 3),
                                _batch("Finished", 6, 6)])

    assert line == "batches (newest 4): 1 open, 2 sealed and running, 8 items left, 1 finished"


def test_status_line_says_none_when_there_are_no_batches():
    assert batches.status_line([]) == "batches: none"


class Refusing:
    """A connection whose every statement fails with SQL Server error ``number``."""

    def __init__(self, number):
        self.number = number

    def cursor(self):
        number = self.number

        class Failing(FakeCursor):
            def execute(self, sql, *params):
                raise db.SqlError([db.ServerMessage(number, "refused", "42S02")])

        return Failing([])


@pytest.mark.parametrize(("number", "says"), [(208, "is not in this database"), (229, "may not read")])
def test_status_line_of_says_why_when_the_view_cannot_be_read(number, says):
    assert says in batches.status_line_of(Refusing(number))


def test_status_line_of_raises_any_other_error():
    with pytest.raises(db.SqlError):
        batches.status_line_of(Refusing(1205))


def test_status_line_of_reads_the_newest_twenty():
    cursor = FakeCursor([(list(batches.COLUMNS), [ROW])])

    line = batches.status_line_of(FakeConnection(cursor))

    assert line == "batches (newest 1): 0 open, 1 sealed and running, 2 items left, 0 finished"
    assert cursor.executed[1] == (20,)
