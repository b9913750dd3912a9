"""The dashboard's parts on their own: the SQL the store sends (keyset paging, the health
index's filter, LIKE escaping, permission checks, control calls), what is masked or never
read, the chart, and the warning for an address others can reach. The metrics' are in
test_metrics.py."""

from __future__ import annotations

import logging
from datetime import datetime

import pytest

from relq.dashboard import access, privacy
from relq.dashboard.chart import History
from relq.dashboard.serve import exposure_warning
from relq.dashboard.store import Column, Filter, SqlStore, list_sql, procedure
from relq.status import QueueHealth
from tests.dashboard.fake_store import FakeStore
from tests.results import ITEM_COLUMNS
from tests.test_db import FakeConnection, FakeCursor

KEY = datetime(2026, 11, 26, 9, 0, 0, 123456)


def test_a_page_of_items_is_a_keyset_seek_never_an_offset() -> None:
    sql, params = list_sql("Notification", Filter("Failed", "ResetPassword", None, True, KEY), 51)
    assert sql == ("SELECT TOP (51) [EnqueuedAt], [Type], [Status], [AttemptNum], [ScheduledFor], "
                   "[UpdatedAt], [Error] FROM dbo.Worker_Notification_V "
                   "WHERE [Status] = CAST(? AS VARCHAR(20)) AND [Type] = CAST(? AS VARCHAR(50)) "
                   "AND EnqueuedAt < CAST(? AS DATETIME2(7)) ORDER BY EnqueuedAt DESC;")
    assert params == ["Failed", "ResetPassword", KEY]
    oldest, _ = list_sql("SyncQueue", Filter(after=KEY, newest_first=False), 10)
    assert "EnqueuedAt > CAST(? AS DATETIME2(7))" in oldest and oldest.endswith("ORDER BY EnqueuedAt ASC;")
    assert "OFFSET" not in sql + oldest


def test_a_list_of_an_unfinished_state_states_the_health_index_filter_literally() -> None:
    # With the literal, the optimizer may seek IX_<Queue>_Status (filtered to these states)
    # whatever state the parameter carries; a finished state's list reads the queue by key.
    for state in ("Pending", "Processing", "Error", "Paused"):
        sql, params = list_sql("SyncQueue", Filter(status=state), 10)
        assert ("WHERE [Status] = CAST(? AS VARCHAR(20)) "
                "AND [Status] IN ('Pending', 'Processing', 'Error', 'Paused') ORDER BY") in sql
        assert params == [state]
    for state in ("Failed", "Completed", "Cancelled"):
        sql, params = list_sql("SyncQueue", Filter(status=state), 10)
        assert " IN (" not in sql and params == [state]
    unfiltered, _ = list_sql("SyncQueue", Filter(), 10)
    assert "WHERE" not in unfiltered


def test_error_text_is_matched_literally() -> None:
    sql, params = list_sql("SyncQueue", Filter(error="100%_done [x]\\"), 10)
    assert "Error LIKE ? ESCAPE '\\'" in sql
    assert params == ["%100\\%\\_done \\[x]\\\\%"]


def test_a_queue_name_cannot_carry_sql() -> None:
    with pytest.raises(ValueError, match="not a queue name"):
        list_sql("Notification_V; DROP TABLE x --", Filter(), 10)
    with pytest.raises(ValueError, match="not a control"):
        procedure("Purge", "Notification")


def test_the_store_asks_every_permission_in_one_query() -> None:
    cursor = FakeCursor([(["p0", "p1", "p2"], [(1, 0, None)])])
    held = SqlStore(lambda: FakeConnection(cursor)).permissions(
        [("dbo.QueueHealth_V", "SELECT"), ("dbo.Retry_Notification_trx", "EXECUTE"), ("dbo.Nope", "SELECT")])
    assert held == [True, False, False]
    sql, params = cursor.executed
    assert sql.count("HAS_PERMS_BY_NAME(?, N'OBJECT', ?)") == 3
    assert params == ("dbo.QueueHealth_V", "SELECT", "dbo.Retry_Notification_trx", "EXECUTE", "dbo.Nope",
                      "SELECT")


def test_a_query_that_timed_out_gives_up_its_connection_and_the_next_one_opens_anew() -> None:
    """A read blocked behind someone's open transaction times out (serve.QUERY_TIMEOUT_S); the
    connection it ran on is not reused, so no page waits behind what is left of it."""
    from relq import db

    class Blocked(FakeCursor):
        def execute(self, sql, *params):
            raise db.SqlError([db.ServerMessage(0, "Query timeout expired", "HYT00")])

    opened = []
    cursors = [Blocked([]), FakeCursor([(["p0"], [(1,)])])]

    def connect() -> FakeConnection:
        opened.append(FakeConnection(cursors[len(opened)]))
        return opened[-1]

    store = SqlStore(connect)
    with pytest.raises(db.SqlError, match="Query timeout expired"):
        store.permissions([("dbo.QueueHealth_V", "SELECT")])
    assert store.permissions([("dbo.QueueHealth_V", "SELECT")]) == [True]
    assert len(opened) == 2


def test_the_dashboard_connection_has_a_query_timeout(monkeypatch) -> None:
    from relq import db
    from relq.dashboard import serve

    class Connection:
        timeout = 0

    monkeypatch.setattr(db, "connect", lambda conn_str: Connection())
    assert serve.connect("SERVER=h").timeout == serve.QUERY_TIMEOUT_S > 0


def test_a_control_is_its_procedure_with_the_key_and_the_token() -> None:
    cursor = FakeCursor([(ITEM_COLUMNS, [(KEY, KEY, "Pending", KEY)]), (["return_code"], [(0,)])])
    after = SqlStore(lambda: FakeConnection(cursor)).act("Notification", "Retry", KEY, KEY)
    assert after["Status"] == "Pending"
    sql, params = cursor.executed
    assert "EXEC @rc = dbo.Retry_Notification_trx @EnqueuedAt = ?, @UpdatedAt = ?, @ScheduledFor = ?;" in sql
    assert params == (KEY.isoformat(timespec="microseconds"),) * 2 + (None,)


def test_missing_grants_name_the_role_and_the_objects() -> None:
    store = FakeStore.with_roles("QueueMonitor")
    assert access.missing(store, access.look()) is None
    line = access.missing(store, access.act("SyncQueue"))
    assert line.startswith("controlling SyncQueue's items needs the role QueueAdmin: this login lacks ")
    assert "dbo.Retry_SyncQueue_trx" in line and "dbo.Reschedule_SyncQueue_trx" in line


@pytest.mark.parametrize(("column", "secret", "personal"), [
    (Column("OTP", "OtpCode"), True, False),
    (Column("ResetCode", "OtpCode"), True, False),  # by its type, whatever its name
    (Column("AdminPassword", "nvarchar"), True, False),
    (Column("EmailTo", "Email"), False, True),
    (Column("Recipient", "Email"), False, True),
    (Column("PhoneNumber", "nvarchar"), False, True),  # by its name, for a plain type
    (Column("Username", "DbUsername"), False, True),
    (Column("EmailError", "WebResponse"), False, False),
    (Column("UpdatedAt", "_Timestamp"), False, False),
])
def test_secret_and_personal_columns(column: Column, secret: bool, personal: bool) -> None:
    assert (privacy.is_secret(column), privacy.is_personal(column)) == (secret, personal)


def test_masks_keep_enough_to_tell_two_apart() -> None:
    assert privacy.mask("ann.lee@example.com") == "a***@example.com"
    assert privacy.mask("+358401234567") == "***67"
    assert privacy.mask("ann") == "***"
    assert privacy.mask(None) == ""


def test_the_chart_draws_the_readings_it_kept() -> None:
    history = History(every_s=10, keep_s=3600)
    for t, done in ((0, 1.0), (5, 9.0), (10, 4.0), (20, 2.0)):  # the reading at 5 s is too soon: skipped
        history.add(t, [QueueHealth("Q", completed_per_min=done, failed_per_min=0.5)])
    assert [p.completed for p in history.points["Q"]] == [1.0, 4.0, 2.0]
    svg = history.svg("Q", now=20)
    assert svg.count("<polyline") == 2 and "3 readings, peak 4.0 per minute" in svg
    # At least a minute wide: 20 s of readings fill its right third; the latest reading at
    # the right edge, the peak at the top.
    assert '<polyline class="completed" points="159.3,44.2 198.7,15.0 238.0,34.5"/>' in svg
    history.add(3700, [QueueHealth("Q")])
    assert [p.at for p in history.points["Q"]] == [3700]  # older than an hour: dropped
    assert "<polyline" not in history.svg("Q", now=3700)  # one reading is no line


def test_only_the_loopback_address_binds_without_a_warning() -> None:
    assert exposure_warning("127.0.0.1", True) is None
    assert exposure_warning("::1", True) is None
    assert exposure_warning("localhost", False) is None
    warning = exposure_warning("0.0.0.0", True)
    assert "anyone who reaches it can look at the queues and control their items without a login" in warning
    assert "look at the queues without" in exposure_warning("10.1.2.3", False)


def test_serving_warns_off_the_loopback_and_logs_no_password(monkeypatch, caplog) -> None:
    import uvicorn

    from relq import db
    from relq.dashboard import serve

    started = []
    no_grants = FakeCursor([(["p0", "p1", "p2"], [(0, 0, 0)])])
    monkeypatch.setattr(db, "connect", lambda conn_str: FakeConnection(no_grants))
    monkeypatch.setattr(uvicorn, "run", lambda app, **kwargs: started.append((app, kwargs)))
    target = db.Target("SERVER=db7;DATABASE=relq;UID=ops;PWD=Sup3rSecret!x", "RELQ_MSSQL")
    with caplog.at_level(logging.INFO, logger="relq.dashboard"):
        serve.run(target, host="0.0.0.0", port=8080)
    [(_, kwargs)] = started
    # proxy_headers off: uvicorn would believe X-Forwarded-For from loopback (guard.py believes it instead)
    assert kwargs == {"host": "0.0.0.0", "port": 8080, "log_level": "warning", "proxy_headers": False}
    lines = [r.getMessage() for r in caplog.records]
    assert lines[0].startswith("dashboard: the queues' health needs the role QueueMonitor")
    assert lines[1].startswith("dashboard: warning: bound to 0.0.0.0, not 127.0.0.1")
    assert lines[2] == "dashboard: http://0.0.0.0:8080/ over server=db7, database=relq, uid=ops, read only"
    assert "Sup3rSecret" not in caplog.text


def test_on_the_loopback_address_only_its_own_names_are_answered() -> None:
    from starlette.testclient import TestClient

    from relq.dashboard.app import Settings, create_app
    from relq.dashboard.serve import host_names

    assert host_names("0.0.0.0") is None
    assert host_names("::1") == ["127.0.0.1", "[::1]", "localhost"]
    app = create_app(FakeStore.with_roles("QueueMonitor"), Settings(allowed_hosts=host_names("127.0.0.1")))
    local = TestClient(app, base_url="http://127.0.0.1:8350")
    assert local.get("/").status_code == 200
    assert local.get("/", headers={"Host": "localhost:8350"}).status_code == 200
    rebound = local.get("/", headers={"Host": "attacker.example:8350"})
    assert rebound.status_code == 400 and "csrf" not in rebound.text
