"""SqlProcedures.read against a stand-in cursor: the worker view's row as the item, and
an item gone from the view as Lost."""

from __future__ import annotations

from datetime import datetime

import pytest

from relq.worker.procedures import Claim, Lost, SqlProcedures
from tests.test_db import FakeConnection, FakeCursor

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
