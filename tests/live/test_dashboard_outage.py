"""The dashboard when its session is killed, against a real SQL Server: the server closes the
dashboard's connection (KILL, from another connection, as an outage or a failover would end
it), and the next page is served on a new connection; a control call whose session is killed
while it waits is never made again, and its page says it may or may not have run and shows
the item as it is. (Microsoft's ODBC driver may restore an idle connection on its own first,
its connection resiliency: the page is served either way, and only with FreeTDS does the test
insist that relq's own second try ran.)

KILL needs ALTER ANY CONNECTION (the live tier's login is a sysadmin)."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from starlette.testclient import TestClient

from relq import db
from relq.dashboard.app import Settings, create_app
from relq.dashboard.store import SqlStore
from relq.worker.procedures import SqlProcedures

pytestmark = pytest.mark.mssql

JOB_TYPE = "RelqOutageJob"  # a type of its own, so that no other test's item is claimed here
CSRF = "live-outage-csrf"
DEADLINE_S = 60


@pytest.fixture
def dbo(mssql, live_database: str) -> Iterator[Any]:
    """As dbo (a sysadmin): the job type, and no items of it yet."""
    conn = db.connect(db.with_database(mssql.conn_str, live_database))
    db.run_batch(conn.cursor(), f"""
        IF NOT EXISTS (SELECT 1 FROM dbo.SyncQueueType WHERE [Type] = '{JOB_TYPE}')
            INSERT INTO dbo.SyncQueueType ([Type]) VALUES ('{JOB_TYPE}');
        DELETE FROM dbo.SyncQueue WHERE [Type] = '{JOB_TYPE}';
    """)
    yield conn
    conn.close()


@pytest.fixture
def dashboard(member, dbo) -> tuple[TestClient, list[int]]:
    """A dashboard (actions allowed) as a member of QueueMonitor and QueueAdmin, and the session
    id of each connection it opened, in order."""
    connect_member = member("QueueMonitor", "QueueAdmin")
    sessions: list[int] = []

    def connect() -> Any:
        conn = connect_member()
        sessions.append(int(db.query(conn.cursor(), "SELECT @@SPID;")[0][0]))
        return conn

    app = create_app(SqlStore(connect), Settings(allow_actions=True, csrf=CSRF))
    return TestClient(app, follow_redirects=False), sessions


def failed_item(dbo) -> Any:
    """A sync job of JOB_TYPE, claimed and reported Failed: its key."""
    db.run_batch(dbo.cursor(), f"""
        SET NOCOUNT ON;
        DECLARE @Items dbo.SyncQueueItemList;
        INSERT INTO @Items (ItemNo, [Type], EntityKey) VALUES (1, '{JOB_TYPE}', N'outage-test');
        EXEC dbo.Add_SyncQueue_trx @Items = @Items;
    """)
    procedures = SqlProcedures(dbo, "SyncQueue")
    [claim] = procedures.claim("outage-test/1", 1, 0, type=JOB_TYPE)
    _, status = procedures.report(claim, "Failed", error="HTTP 410 from the CRM: gone")
    assert status == "Failed"
    return claim.key


def kill(dbo, session: int) -> None:
    """End ``session``, and wait until it is gone (not only in the kill state, where a call would
    meet 596 rather than a closed link: both are handled, the closed link is the case to test)."""
    cursor = dbo.cursor()
    db.run_batch(cursor, f"KILL {int(session)};")
    deadline = time.monotonic() + DEADLINE_S
    while db.query(cursor, "SELECT 1 FROM sys.dm_exec_sessions WHERE session_id = ?;", session):
        assert time.monotonic() < deadline, f"session {session} did not end"
        time.sleep(0.1)


def status_of(dbo, key) -> str:
    return db.query(dbo.cursor(), "SELECT [Status] FROM dbo.SyncQueue WHERE EnqueuedAt = ?;", key)[0][0]


def iso(value) -> str:
    return value.isoformat(timespec="microseconds")


def freetds(mssql) -> bool:
    return "freetds" in mssql.conn_str.casefold()


def test_the_page_after_the_dashboards_session_is_killed_is_served(mssql, dbo, dashboard, caplog) -> None:
    key = failed_item(dbo)
    app, sessions = dashboard
    assert app.get("/").status_code == 200 and len(sessions) == 1

    kill(dbo, sessions[0])
    page = app.get(f"/queues/SyncQueue?status=Failed&type={JOB_TYPE}")
    assert page.status_code == 200, page.text
    assert iso(key) in page.text and "HTTP 410 from the CRM" in page.text
    if freetds(mssql):  # the read met the closed link, and was made again on a new connection
        assert len(sessions) == 2 and sessions[1] != sessions[0]
        assert "reading again on a new connection" in caplog.text
    assert app.get(f"/queues/SyncQueue/items/{iso(key)}").status_code == 200  # and the pages go on


def test_a_retry_whose_session_is_killed_while_it_waits_says_it_may_have_run(
        mssql, live_database, dbo, dashboard, caplog) -> None:
    key = failed_item(dbo)
    app, sessions = dashboard
    page = app.get(f"/queues/SyncQueue/items/{iso(key)}")
    assert page.status_code == 200, page.text
    token = re.search(r'name="token" value="([^"]+)"', page.text)[1]

    # Another connection holds the item's row (an update lock), so that the dashboard's Retry waits
    # for it; the KILL comes from the test's first connection, outside that transaction.
    holding = db.connect(db.with_database(mssql.conn_str, live_database))
    holder = holding.cursor()
    db.run_batch(holder, "BEGIN TRANSACTION;")
    try:
        db.query(holder, "SELECT [Status] FROM dbo.SyncQueue WITH (UPDLOCK, HOLDLOCK, ROWLOCK) "
                         "WHERE EnqueuedAt = ?;", key)
        answer: dict[str, Any] = {}
        retry = threading.Thread(target=lambda: answer.update(response=app.post(
            f"/queues/SyncQueue/items/{iso(key)}/Retry", data={"csrf": CSRF, "token": token})))
        retry.start()
        deadline = time.monotonic() + DEADLINE_S
        while not db.query(holder, "SELECT 1 FROM sys.dm_exec_requests WHERE session_id = ? "
                                   "AND blocking_session_id = @@SPID;", sessions[-1]):
            assert time.monotonic() < deadline, "the dashboard's Retry never waited for the test's lock"
            time.sleep(0.1)
        kill(dbo, sessions[-1])
        retry.join(DEADLINE_S)
        assert not retry.is_alive()
    finally:
        db.run_batch(holder, "IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;")
        holding.close()

    response = answer["response"]
    assert response.status_code == 503, response.text
    assert "Retry may or may not have run" in response.text
    assert "Here is the item as it is now" in response.text
    # killed while it waited: it did not run, the page read the item again and shows it so
    assert status_of(dbo, key) == "Failed"
    assert re.search(r'<span class="status Failed">Failed</span></h1>', response.text)
    assert "may or may not have run" in caplog.text
    token = re.search(r'name="token" value="([^"]+)"', response.text)[1]
    done = app.post(f"/queues/SyncQueue/items/{iso(key)}/Retry", data={"csrf": CSRF, "token": token})
    assert done.status_code == 303, done.text  # the person tries again, on purpose, and it runs once
    assert status_of(dbo, key) == "Pending"
