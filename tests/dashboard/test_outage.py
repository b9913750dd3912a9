"""The dashboard through a database outage, offline: SqlStore's connection replaced and a read
made again once on a new one, an action made once (against connections that speak pyodbc's
cursor protocol and break as a server's do), and the pages over a FlakyStore whose server
restarts, goes down and comes back (tests/dashboard/fake_store.py): the read served, the
action's page saying whether it ran, a log line for every failure, the overview's banner and
stale marks, and the recovery."""

from __future__ import annotations

import logging
import re
from datetime import datetime, timezone
from typing import Any

import pytest
from starlette.testclient import TestClient

from relq import db
from relq.dashboard import outage
from relq.dashboard.app import Settings, create_app
from relq.dashboard.store import (
    LISTED,
    RECONNECT_PAUSE_S,
    CallLost,
    Filter,
    SqlStore,
    Unreachable,
    outage_of,
)
from relq.errors import RelqError
from tests.dashboard.fake_store import CANNOT_CONNECT, T0, FakeStore, FlakyStore, link_failed
from tests.results import ITEM_COLUMNS

CSRF = "the-dashboards-csrf-token"
LOGGER = "relq.dashboard"


def error(number: int | None, text: str, state: str | None) -> db.SqlError:
    return db.SqlError([db.ServerMessage(number, text, state)])


# What a call meets on a connection that is gone, as drivers word it.
GONE = {
    "restart (FreeTDS)": error(0, "Unknown error", "HY000"),
    "communication link failure": error(10054, "TCP Provider: Error code 0x2746", "08S01"),
    "physical connection not usable": error(None, "SMux Provider: Physical connection is not usable "
                                                  "[xFFFFFFFF].", "08S02"),
    "not restored by the driver": error(None, "The connection is broken and recovery is not possible. The "
                                              "connection is marked by the client driver as unrecoverable.",
                                        "IMC06"),
    "killed": error(596, "Cannot continue the execution because the session is in the kill state.", "HY000"),
    "closed": error(None, "Attempt to use a closed connection.", None),
}
TIMEOUT = error(0, "Query timeout expired", "HYT00")
DENIED = error(229, "The SELECT permission was denied on the object 'Worker_SyncQueue_V'", "42000")


# -- SqlStore's connection, against connections that speak pyodbc's cursor protocol ------------


class Server:
    """What a store's connections reach: each batch's result sets (``answer``), the failures
    the next batches meet (``fail``, in order), and whether a connect is refused."""

    def __init__(self) -> None:
        self.connections: list[Connection] = []
        self.executed: list[str] = []
        self.fail: list[db.SqlError] = []
        self.refuse = False
        self.now = 1000.0  # the store's clock (time.monotonic's stand-in)

    def connect(self) -> Connection:
        if self.refuse:
            self.connections.append(None)  # type: ignore[arg-type]  # a connect tried and refused
            raise RelqError(CANNOT_CONNECT)
        conn = Connection(self)
        self.connections.append(conn)
        return conn

    @property
    def tried(self) -> int:
        return len(self.connections)

    def answer(self, sql: str) -> list[tuple[list[str], list[tuple]]]:
        if "HAS_PERMS_BY_NAME" in sql:
            return [(["p0"], [(1,)])]
        if sql.lstrip().startswith("SELECT TOP"):
            return [(list(LISTED), [(T0, "ResetPassword", "Failed", 1, T0, T0, "SMTP 550")])]
        if "EXEC @rc" in sql:
            return [(list(ITEM_COLUMNS), [tuple(None for _ in ITEM_COLUMNS)]), (["return_code"], [(0,)])]
        raise AssertionError(f"no answer for {sql[:60]!r}")


class Connection:
    def __init__(self, server: Server) -> None:
        self.server = server
        self.closed = False

    def cursor(self) -> Cursor:
        return Cursor(self)

    def close(self) -> None:
        self.closed = True


class Cursor:
    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.sets: list[tuple[list[str], list[tuple]]] = []
        self.description: list[tuple[str]] | None = None

    def execute(self, sql: str, *params: Any) -> None:
        assert not self.conn.closed, "a closed connection was used"
        self.conn.server.executed.append(sql)
        if self.conn.server.fail:
            raise self.conn.server.fail.pop(0)
        self.sets = self.conn.server.answer(sql)
        self.description = [(c,) for c in self.sets[0][0]]

    def fetchall(self) -> list[tuple]:
        return list(self.sets[0][1])

    def nextset(self) -> bool:
        self.sets.pop(0)
        self.description = [(c,) for c in self.sets[0][0]] if self.sets else None
        return bool(self.sets)

    def close(self) -> None:
        pass


@pytest.fixture
def server() -> Server:
    return Server()


def sql_store(server: Server) -> SqlStore:
    store = SqlStore(server.connect, clock=lambda: server.now)
    store.permissions([("dbo.QueueHealth_V", "SELECT")])  # connected once, as a dashboard that started
    return store


def lines(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == LOGGER]


@pytest.mark.parametrize("gone", GONE.values(), ids=GONE.keys())
def test_a_read_whose_connection_is_gone_is_made_again_once_on_a_new_connection(server, gone, caplog) -> None:
    store = sql_store(server)
    server.fail = [gone]
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        rows = store.items("Notification", Filter("Failed"), 51)
    assert [r["Error"] for r in rows] == ["SMTP 550"]
    assert server.tried == 2 and server.connections[0].closed and not server.connections[1].closed
    assert sum("SELECT TOP" in sql for sql in server.executed) == 2
    [line] = lines(caplog)
    assert "the connection to the database broke" in line and "reading again on a new connection" in line
    assert str(gone) in line


def test_a_read_that_fails_on_the_new_connection_too_is_not_made_a_third_time(server, caplog) -> None:
    store = sql_store(server)
    server.fail = [GONE["restart (FreeTDS)"], GONE["communication link failure"]]
    with caplog.at_level(logging.WARNING, logger=LOGGER), pytest.raises(db.SqlError) as raised:
        store.items("Notification", Filter(), 51)
    assert raised.value.sqlstate == "08S01" and outage_of(raised.value) == "broken"
    assert sum("SELECT TOP" in sql for sql in server.executed) == 2 and server.tried == 2
    assert len(lines(caplog)) == 2 and "on the new connection too" in lines(caplog)[1]
    store.items("Notification", Filter(), 51)  # the next read opens a third connection
    assert server.tried == 3


def test_a_read_whose_new_connection_cannot_be_opened_says_the_database_is_unreachable(
        server, caplog) -> None:
    store = sql_store(server)
    server.fail, server.refuse = [GONE["restart (FreeTDS)"]], True
    with caplog.at_level(logging.WARNING, logger=LOGGER), pytest.raises(Unreachable) as raised:
        store.health()
    assert outage_of(raised.value) == "unreachable" and raised.value.tried
    assert [line.split(":")[0] for line in lines(caplog)] == ["dashboard"] * 2
    assert "cannot reach the database: cannot reach SQL Server (server=db7.internal" in lines(caplog)[1]


def test_a_read_that_timed_out_is_not_made_again_but_its_connection_is_replaced(server, caplog) -> None:
    store = sql_store(server)
    server.fail = [TIMEOUT]
    with caplog.at_level(logging.WARNING, logger=LOGGER), pytest.raises(db.SqlError):
        store.items("Notification", Filter(), 51)
    assert sum("SELECT TOP" in sql for sql in server.executed) == 1 and server.connections[0].closed
    [line] = lines(caplog)
    assert "stopped after waiting too long" in line
    store.items("Notification", Filter(), 51)
    assert server.tried == 2


def test_a_refusal_keeps_the_connection_is_not_made_again_and_logs_nothing(server, caplog) -> None:
    store = sql_store(server)
    server.fail = [DENIED]
    with caplog.at_level(logging.WARNING, logger=LOGGER), pytest.raises(db.SqlError):
        store.items("SyncQueue", Filter(), 51)
    assert server.tried == 1 and not server.connections[0].closed and lines(caplog) == []
    assert sum("SELECT TOP" in sql for sql in server.executed) == 1


@pytest.mark.parametrize("gone", [GONE["communication link failure"], GONE["restart (FreeTDS)"], TIMEOUT],
                         ids=["link failure", "restart", "timeout"])
def test_an_action_whose_connection_breaks_is_made_once_and_said_lost(server, gone, caplog) -> None:
    store = sql_store(server)
    server.fail = [gone]
    with caplog.at_level(logging.WARNING, logger=LOGGER), pytest.raises(CallLost) as raised:
        store.act("Notification", "Retry", T0, T0)
    assert raised.value.error is gone and outage_of(raised.value) == "lost"
    assert sum("EXEC @rc" in sql for sql in server.executed) == 1  # never made again
    assert server.connections[0].closed and lines(caplog) == []  # the page's own line says who did what
    store.act("Notification", "Retry", T0, T0)  # the next call opens a new connection
    assert server.tried == 2


def test_an_action_whose_connect_fails_sends_nothing(server) -> None:
    store = sql_store(server)
    server.fail, server.refuse = [GONE["killed"]], True
    with pytest.raises(Unreachable):
        store.items("Notification", Filter(), 51)  # the session is gone, and no new one opens
    with pytest.raises(Unreachable) as paused:
        store.act("Notification", "Retry", T0, T0)
    assert not paused.value.tried and server.tried == 2
    server.now += RECONNECT_PAUSE_S
    with pytest.raises(Unreachable) as refused:
        store.act("Notification", "Retry", T0, T0)
    assert refused.value.tried and server.tried == 3
    assert not any("EXEC @rc" in sql for sql in server.executed)


def test_a_connect_that_failed_is_not_tried_again_for_a_pause(server, caplog) -> None:
    store = sql_store(server)
    server.fail, server.refuse = [GONE["communication link failure"]], True
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        with pytest.raises(Unreachable):
            store.health()
        assert server.tried == 2 and len(lines(caplog)) == 2
        server.now += RECONNECT_PAUSE_S - 0.1
        with pytest.raises(Unreachable) as refused:
            store.health()  # refused at once, without a connect nor a line
        assert not refused.value.tried and server.tried == 2 and len(lines(caplog)) == 2
        server.now += 0.2
        with pytest.raises(Unreachable):
            store.health()
        assert server.tried == 3 and len(lines(caplog)) == 3
        server.refuse, server.now = False, server.now + RECONNECT_PAUSE_S
        assert store.permissions([("dbo.QueueHealth_V", "SELECT")]) == [True]
    assert server.tried == 4 and len(lines(caplog)) == 3


def test_a_dashboards_first_connect_that_fails_is_left_to_its_caller_to_say(server, caplog) -> None:
    server.refuse = True
    with caplog.at_level(logging.WARNING, logger=LOGGER), pytest.raises(Unreachable) as raised:
        SqlStore(server.connect, clock=lambda: server.now).health()
    assert raised.value.first and str(raised.value) == CANNOT_CONNECT and lines(caplog) == []


@pytest.mark.parametrize(("exc", "kind"), [
    *((gone, "broken") for gone in GONE.values()),
    (TIMEOUT, "timeout"),
    (error(None, "Timeout expired", "HYT01"), "timeout"),
    (Unreachable(CANNOT_CONNECT), "unreachable"),
    (CallLost(GONE["killed"]), "lost"),
    (DENIED, None),
    (error(1205, "Transaction was deadlocked", "40001"), None),
    (error(735705, "relq: the item changed since it was read", "42000"), None),
    (error(None, "The SQL contains 1 parameter markers, but 2 parameters were supplied", "HY000"), None),
    (RelqError("dbo.Retry_SyncQueue_trx: no return code came back (the batch ended early)"), None),
])
def test_a_failure_says_whether_the_database_is_away(exc, kind) -> None:
    assert outage_of(exc) == kind


# -- the pages, over a FlakyStore ---------------------------------------------------------------

START = datetime(2026, 11, 26, 10, 42, 7, tzinfo=timezone.utc).timestamp()


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def flaky() -> FlakyStore:
    store = FlakyStore(FakeStore.with_roles("QueueMonitor", "QueueAdmin"))
    store.add("Notification", 12, "Pending")
    store.add("Notification", 2, "Failed", error="SMTP 550 5.1.1 mailbox unavailable")
    store.add("SyncQueue", 5, "Error", type="InventorySync", error="HTTP 503 from the warehouse API")
    return store


def app(store: Any, clock: Clock) -> TestClient:
    return TestClient(create_app(store, Settings(allow_actions=True, csrf=CSRF, clock=clock)),
                      follow_redirects=False)


def iso(key: datetime) -> str:
    return key.isoformat(timespec="microseconds")


def text(html: str) -> str:
    """What a page says, as one line of text."""
    return re.sub(r"\s+([,.):])", r"\1", " ".join(re.sub(r"<[^>]+>", " ", html).split()))


def failed_key(store: FlakyStore) -> datetime:
    return next(r["EnqueuedAt"] for r in store.items_by_queue["Notification"] if r["Status"] == "Failed")


def retry(client: TestClient, store: FlakyStore, key: datetime) -> Any:
    token = next(r["UpdatedAt"] for r in store.items_by_queue["Notification"] if r["EnqueuedAt"] == key)
    return client.post(f"/queues/Notification/items/{iso(key)}/Retry",
                       data={"csrf": CSRF, "token": iso(token)})


def test_the_first_page_after_a_restart_is_served_on_a_new_connection(flaky, clock, caplog) -> None:
    client = app(flaky, clock)
    assert client.get("/").status_code == 200 and flaky.server.connects == 1
    flaky.server.restart()
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        page = client.get("/queues/Notification?status=Failed")
    assert page.status_code == 200, page.text
    assert "SMTP 550" in page.text and "error 0" not in page.text
    assert flaky.server.connects == 2
    [line] = lines(caplog)
    assert "SQL Server error 0: Unknown error" in line and "reading again on a new connection" in line


def test_an_item_page_during_an_outage_names_the_last_good_read(flaky, clock, caplog) -> None:
    client = app(flaky, clock)
    key = failed_key(flaky)
    assert client.get("/").status_code == 200
    flaky.server.go_down()
    clock.now += 100
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        page = client.get(f"/queues/Notification/items/{iso(key)}")
        listed = client.get("/queues/Notification")
    for shown in (page, listed):
        assert shown.status_code == 503 and shown.headers[outage.HEADER] == "unreachable"
        said = text(shown.text)
        assert "The database is not answering" in said
        assert "Since 10:43:47 UTC: no connection to it can be opened." in said
        assert "Last good read: 10:42:07 UTC, 1m40s ago." in said
        assert "SQL Server error" not in said and "db7" not in said and "relq_ops" not in said
    assert 'role="alert"' in page.text
    # the first page met the broken link, then a refused connect; the second, a refused connect
    assert len(lines(caplog)) == 3
    assert "the connection to the database broke" in lines(caplog)[0]
    for line in lines(caplog)[1:]:
        assert line.startswith("dashboard: cannot reach the database: cannot reach SQL Server (server=db7")


def test_the_overview_during_an_outage_keeps_the_last_figures_greyed_under_a_banner(flaky, clock) -> None:
    client = app(flaky, clock)
    live = client.get("/overview")
    assert live.status_code == 200 and 'class="outage' not in live.text and outage.HEADER not in live.headers
    flaky.server.go_down()
    clock.now += 185
    flaky.add("Notification", 30, "Pending")  # not read: the figures stay as last read
    for path in ("/overview", "/"):
        stale = client.get(path)
        assert stale.status_code == 503 and stale.headers[outage.HEADER] == "unreachable"
        banner = re.search(r'<div class="outage" role="alert">(.*?)</div>', stale.text, re.S)[1]
        assert "The database is not answering since 10:45:12 UTC" in text(banner)
        assert "last good read, 10:42:07 UTC (3m05s ago)" in text(banner)
        assert "are not live" in banner
        assert '<p class="stale-mark">stale since 10:42:07 UTC</p>' in stale.text
        # the figures as last read, after the banner: the stylesheet greys them there (.outage ~ .scroll)
        row = re.search(r'data-queue="Notification">(.*?)</tr>', stale.text, re.S)[1]
        assert ">12<" in row and ">42<" not in row
        assert stale.text.index('class="outage"') < stale.text.index('class="scroll"')
    flaky.server.come_back()
    clock.now += 5
    back = client.get("/overview")
    assert back.status_code == 200 and 'class="outage' not in back.text and "stale since" not in back.text
    assert ">42<" in re.search(r'data-queue="Notification">(.*?)</tr>', back.text, re.S)[1]


def test_the_overview_before_any_good_read_says_nothing_was_read(flaky, clock) -> None:
    flaky.server.go_down()
    page = app(flaky, clock).get("/")
    assert page.status_code == 503
    assert 'class="outage never" role="alert"' in page.text
    assert "Nothing has been read since the dashboard started" in page.text and "stale since" not in page.text


def test_the_stylesheet_greys_the_figures_after_the_banner() -> None:
    from relq.dashboard.web import HERE

    css = (HERE / "static" / "dashboard.css").read_text()
    assert re.search(r"\.outage ~ \.scroll tbody td[^{]*\{[^}]*color: #8a939c", css)
    assert ".outage.never ~ .scroll { display: none; }" in css
    assert "opacity: .55" not in css  # a fade alone is what reads as live on a wall screen


def test_an_action_whose_answer_was_lost_after_it_committed_says_it_may_have_run(
        flaky, clock, caplog) -> None:
    client = app(flaky, clock)
    key = failed_key(flaky)
    flaky.server.lose_next_call = "after"
    with caplog.at_level(logging.INFO, logger=LOGGER):
        page = retry(client, flaky, key)
    assert page.status_code == 503
    alert = text(re.search(r'<p class="problem" role="alert">(.*?)</p>', page.text, re.S)[1])
    assert alert.startswith("Retry may or may not have run: the connection to the database broke before")
    assert "Here is the item as it is now" in alert
    # read again on a new connection: it ran, and the page shows so
    assert re.search(r'<h1>.*<span class="status Pending">Pending</span></h1>', page.text)
    assert [a[1] for a in flaky.acted] == ["Retry"]  # made once, never again
    [line] = [r.getMessage() for r in caplog.records if "Retry" in r.getMessage()]
    # who acted (web.client says it as the audit lines do), then what happened
    assert re.search(rf"Retry Notification {re.escape(iso(key))} by [^:]*testclient: may or may not have run",
                     line)
    assert "08S01" not in alert and "TCP Provider" in line


def test_an_action_whose_link_failed_before_it_ran_says_it_may_have_run_and_shows_it_did_not(
        flaky, clock) -> None:
    client = app(flaky, clock)
    key = failed_key(flaky)
    flaky.server.lose_next_call = "before"
    page = retry(client, flaky, key)
    assert page.status_code == 503 and "Retry may or may not have run" in page.text
    assert re.search(r'<h1>.*<span class="status Failed">Failed</span></h1>', page.text)
    assert flaky.acted == []
    assert 'class="retry"' in page.text  # offered again, with the token read now


def test_an_action_while_the_database_is_down_says_it_did_not_run(flaky, clock, caplog) -> None:
    client = app(flaky, clock)
    key = failed_key(flaky)
    page = client.get(f"/queues/Notification/items/{iso(key)}")
    token = re.search(r'name="token" value="([^"]+)"', page.text)[1]
    flaky.server.go_down()
    with caplog.at_level(logging.INFO, logger=LOGGER):
        done = client.post(f"/queues/Notification/items/{iso(key)}/Retry",
                           data={"csrf": CSRF, "token": token})
    assert done.status_code == 503
    said = text(done.text)
    assert "Retry did not run: the dashboard cannot reach the database, so nothing was sent." in said
    assert "Last good read: 10:42:07 UTC" in said and "db7" not in said
    assert flaky.acted == []
    did_not_run = [r.getMessage() for r in caplog.records if "did not run" in r.getMessage()]
    [line] = did_not_run
    assert line.startswith(f"dashboard: Retry Notification {iso(key)} by ") and "testclient" in line
    assert line.endswith(f": did not run, the database is away ({CANNOT_CONNECT})")


def test_an_action_whose_answer_was_lost_while_the_database_stays_away_says_it_may_have_run(
        flaky, clock) -> None:
    client = app(flaky, clock)
    key = failed_key(flaky)
    flaky.server.lose_next_call = "after"
    real_restart = flaky.server.restart

    def down(error: Any = link_failed) -> None:  # the link fails, and the server stays away
        real_restart(error)
        flaky.server.up = False

    flaky.server.restart = down  # type: ignore[method-assign]
    page = retry(client, flaky, key)
    assert page.status_code == 503
    said = text(page.text)
    assert "Retry may or may not have run" in said and "The item cannot be read now either" in said
    assert "Last good read: 10:42:07 UTC" in said
    assert [a[1] for a in flaky.acted] == ["Retry"]


def test_the_first_action_after_a_restart_runs_on_a_new_connection(flaky, clock) -> None:
    """The reads before an action (the queue known, the permissions) meet the dropped connection
    first, and are made again: the action goes out on the new connection, and runs."""
    client = app(flaky, clock)
    key = failed_key(flaky)
    assert client.get(f"/queues/Notification/items/{iso(key)}").status_code == 200
    flaky.server.restart()
    done = retry(client, flaky, key)
    assert done.status_code == 303 and [a[1] for a in flaky.acted] == ["Retry"]


def test_metrics_during_an_outage_answer_503_in_one_line(flaky, clock) -> None:
    client = app(flaky, clock)
    assert client.get("/").status_code == 200
    flaky.server.go_down()
    metrics = client.get("/metrics")
    assert metrics.status_code == 503 and metrics.text.count("\n") == 1 and "db7" not in metrics.text


def test_the_watch_dates_an_older_read_and_a_lost_answer_starts_no_outage() -> None:
    watch = outage.Watch()
    watch.good(START, [])
    day_later = START + 24 * 3600
    lost = watch.failed(day_later, CallLost(GONE["killed"]))
    assert (lost.kind, lost.last_read, lost.ago) == ("lost", "2026-11-26 10:42:07 UTC", "24h00m")
    assert watch.failing_since is None  # a call's lost answer says nothing of the reads
    away = watch.failed(day_later + 1, Unreachable(CANNOT_CONNECT))
    assert (away.kind, away.since) == ("unreachable", "10:42:08 UTC")
    assert away.why == "no connection to it can be opened"
    assert watch.failed(day_later + 9, TIMEOUT).since == "10:42:08 UTC"  # since the first failure
    watch.good(day_later + 10, [])
    assert watch.failing_since is None and watch.failed(day_later + 11, TIMEOUT).ago == "1s"
