"""The deploy executor's sequencing, against a stand-in connection that records
what it is sent. What SQL Server makes of the SQL is the live tier's job
(tests/live); this proves the order of lock, journal, batches and commits."""

from __future__ import annotations

import io
import re

import pytest
from rich.console import Console

from relq import db
from relq.deploy.apply import HOLDERS_PERMISSION, ONLINE_KEY, DeployFailed, check, deploy
from relq.deploy.preflight import PreflightFailed, project_messages
from relq.errors import RelqError
from tests.conftest import Project
from tests.deploy.fixture_changes import (
    FN,
    INDEX_MIGRATION,
    MIGRATION,
    add_attempts_index,
    add_priority,
    altered,
    indexed,
    revalidates,
)


class FakeServerError(Exception):
    """Stands in for a pyodbc error; relq.db recognises it through this test's patch."""


class Cursor:
    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.description = None
        self._rows: list[tuple] = []

    def execute(self, sql: str, *params) -> None:
        self.conn.log.append(("sql", " ".join(sql.split()), params))
        if self.conn.fail_on and self.conn.fail_on in sql:
            raise FakeServerError("42S22", "[42S22] [FreeTDS][SQL Server]Invalid column name 'x'. (207)")
        for marker, times in self.conn.lock_timeouts.items():
            if marker in sql and times != 0:
                self.conn.lock_timeouts[marker] = times - 1  # below 0: every time
                raise FakeServerError("HY000", "[HY000] [FreeTDS][SQL Server]Lock request time out period "
                                               "exceeded. (1222)")
        answer = self.conn.answer(sql, params)
        self.description = [("c",)] if answer is not None else None
        self._rows = answer or []

    def fetchall(self) -> list[tuple]:
        return self._rows

    def nextset(self) -> bool:
        return False

    def close(self) -> None:
        self.conn.log.append(("cursor closed",))


class Connection:
    def __init__(self, journal: dict[str, str] | None = None, fail_on: str | None = None) -> None:
        self.log: list[tuple] = []
        self.journal = journal or {}
        self.fail_on = fail_on
        self.trancount = 1  # what @@TRANCOUNT answers after a failure
        self.rollback_fails = False
        self.messages: list[tuple] = []  # sys.messages rows of the project's numbers
        self.messages_once_locked: list[tuple] | None = None  # what another deploy registered meanwhile
        self.rows: dict[str, int] = {}  # sys.partitions: the tables that exist, with their rows
        self.edition = 3  # SERVERPROPERTY('EngineEdition'): 3 Enterprise or Developer, 2 Standard
        self.lock_timeouts: dict[str, int] = {}  # a batch's text -> how many times it times out (-1: always)
        self.holders: list[tuple] = []  # what sys.dm_tran_locks shows after a timeout
        self.holders_hidden = False  # the login may not read sys.dm_tran_locks
        self._autocommit = True

    @property
    def autocommit(self) -> bool:
        return self._autocommit

    @autocommit.setter
    def autocommit(self, value: bool) -> None:
        self._autocommit = value
        self.log.append(("autocommit", value))

    def answer(self, sql: str, params: tuple = ()) -> list[tuple] | None:
        if "DB_NAME()" in sql:
            return [("relq_db",)]
        if "sp_getapplock" in sql:
            if self.messages_once_locked is not None:
                self.messages = self.messages_once_locked
            return [(0,)]
        if "OBJECT_ID(N'relq.DeployJournal'" in sql:
            return [(1 if self.journal else None,)]
        if "FROM relq.DeployJournal" in sql:
            return list(self.journal.items())
        if "SELECT OBJECT_ID(?, N'C')" in sql:
            return [(1,)]
        if "SERVERPROPERTY('EngineEdition')" in sql:  # the preflight: SQL Server 2022, all well
            return [(self.edition, "16.0.4135.4", "SQL_Latin1_General_CP1_CI_AS", 1, 160, False,
                     "SQL_Latin1_General_CP1_CI_AS", 1, 0, "deployer", 1, 1, "READ_WRITE", "ONLINE", 0,
                     None)]
        if "FROM sys.messages" in sql:
            return self.messages
        if "FROM sys.partitions" in sql:  # SUM over no partitions: NULL
            return [(self.rows.get(params[0]),)]
        if "sys.dm_tran_locks" in sql:
            if self.holders_hidden:
                raise FakeServerError("42000", "[42000] [FreeTDS][SQL Server]VIEW SERVER STATE permission "
                                               "was denied on object 'server', database 'master'. (300)")
            return self.holders
        if "@@TRANCOUNT" in sql:
            if self.trancount is None:
                raise FakeServerError("08S01", "[08S01] [FreeTDS]Communication link failure (0)")
            return [(self.trancount,)]
        return None

    def cursor(self) -> Cursor:
        return Cursor(self)

    def commit(self) -> None:
        self.log.append(("commit",))

    def rollback(self) -> None:
        self.log.append(("rollback",))
        if self.rollback_fails:  # as a driver may when the server has no transaction left to end
            raise FakeServerError("25000", "[25000] [FreeTDS][SQL Server]no corresponding BEGIN (3903)")

    def close(self) -> None:
        self.log.append(("close",))


@pytest.fixture
def server(monkeypatch):
    holder: dict[str, Connection] = {}

    def connect(conn_str: str, **_) -> Connection:
        return holder["conn"]

    monkeypatch.setattr(db, "connect", connect)
    monkeypatch.setattr(db, "_is_pyodbc_error", lambda exc, kind="Error": isinstance(exc, FakeServerError))
    return holder


TARGET = db.Target("DRIVER={FreeTDS};SERVER=x;DATABASE=relq_db;UID=sa;PWD=p", "--conn")


def sql_log(conn: Connection) -> list[str]:
    """The batches sent, in order; the preflight's question whether the login holds the
    permission CREATE ANY DATABASE blanked, so that "CREATE" in a batch means it creates."""
    return [entry[1].replace("'CREATE ANY DATABASE'", "'(a permission)'") for entry in conn.log
            if entry[0] == "sql"]


def after_last_file_began(conn: Connection) -> list[tuple]:
    """What the connection was sent since the last file's transaction began."""
    began = max(i for i, entry in enumerate(conn.log) if entry == ("autocommit", False))
    return conn.log[began + 1:]


def test_the_lock_comes_first_then_the_journal_then_each_file_in_its_transaction(
    project: Project, server
) -> None:
    conn = server["conn"] = Connection()
    outcome = deploy(project.root, TARGET)
    log = sql_log(conn)
    locked = next(i for i, s in enumerate(log) if "sp_getapplock" in s)
    assert log[locked + 1] == "SET LOCK_TIMEOUT 5000;"  # every statement from here on waits 5 s at most
    assert "sp_set_session_context" in log[locked + 2]
    assert "CREATE SCHEMA relq" in log[locked + 3]
    before = log[:locked]  # the preflight: reads only
    assert any("SERVERPROPERTY" in s for s in before) and any("FROM sys.messages" in s for s in before)
    assert not any(word in s for s in before for word in ("CREATE", "INSERT", "UPDATE", "sp_addmessage"))
    first_file = project.build().order[0]
    assert outcome.plan.steps[0].path == first_file
    records = [e for e in conn.log if e[0] == "sql" and e[1].startswith("SET NOCOUNT ON; UPDATE relq.Deploy")]
    assert len(records) == len(project.build().order)
    transactional = [s for s in outcome.plan.steps if s.kind != "messages"]  # messages autocommit
    assert conn.log.count(("commit",)) == len(transactional)
    assert ("rollback",) not in conn.log
    assert conn.log[-1] == ("close",)


def test_a_function_with_checks_drops_and_readds_them_around_its_batches(project: Project, server) -> None:
    result = project.build()
    journal = {p: result.sources[p].checksum for p in result.order}
    fn = "database/functions/dbo.JobIsKnown_fn.sql"
    project.edit(fn, "RETURN 0;", "RETURN CAST(0 AS BIT);")
    conn = server["conn"] = Connection(journal)
    deploy(project.root, TARGET)
    log = sql_log(conn)
    drop = next(i for i, s in enumerate(log) if "ALTER TABLE [dbo].[Job] DROP CONSTRAINT" in s)
    alter = next(i for i, s in enumerate(log) if "CREATE OR ALTER FUNCTION" in s)
    add = next(i for i, s in enumerate(log) if "WITH CHECK ADD CONSTRAINT [Job_HasKnown_Status]" in s)
    assert drop < alter < add
    assert conn.log.count(("commit",)) == 1


def test_a_failing_batch_rolls_back_its_file_and_names_file_and_line(project: Project, server) -> None:
    conn = server["conn"] = Connection(fail_on="CREATE OR ALTER VIEW")
    with pytest.raises(DeployFailed) as failed:
        deploy(project.root, TARGET)
    view = "database/views/dbo.Worker_Job_V.sql"
    line = project.line_of(view, "/* dbo.Worker_Job_V")
    expected = rf"^{re.escape(view)}:{line}: SQL Server error 207: Invalid column name 'x'"
    assert re.match(expected, str(failed.value))
    assert "the next deploy resumes here" in str(failed.value)
    assert "nothing of this file was applied (rolled back)" in str(failed.value)
    # Autocommit stays off: switching it on would commit what the file left open.
    assert conn.log[-2:] == [("rollback",), ("close",)]
    assert ("autocommit", True) not in after_last_file_began(conn)


def test_a_file_the_server_rolled_back_is_not_rolled_back_again_and_says_so(
    project: Project, server
) -> None:
    conn = server["conn"] = Connection(fail_on="CREATE OR ALTER VIEW")
    conn.trancount, conn.rollback_fails = 0, True  # XACT_ABORT ended the transaction on the server
    with pytest.raises(DeployFailed) as failed:
        deploy(project.root, TARGET)
    assert "nothing of this file was applied (the server had rolled it back)" in str(failed.value)
    assert ("rollback",) not in conn.log and conn.log[-1] == ("close",)
    assert ("commit",) not in after_last_file_began(conn)
    assert ("autocommit", True) not in after_last_file_began(conn)


def test_a_file_whose_connection_failed_says_nothing_of_it_was_committed(project: Project, server) -> None:
    conn = server["conn"] = Connection(fail_on="CREATE OR ALTER VIEW")
    conn.trancount = None  # the server cannot be asked: the link is gone
    with pytest.raises(DeployFailed) as failed:
        deploy(project.root, TARGET)
    assert "nothing of this file was committed (the connection failed" in str(failed.value)
    assert "partly applied" not in str(failed.value)
    assert conn.log[-1] == ("close",)


def test_a_dry_run_takes_no_lock_and_writes_nothing(project: Project, server) -> None:
    conn = server["conn"] = Connection()
    outcome = deploy(project.root, TARGET, dry_run=True)
    log = sql_log(conn)
    assert not any("sp_getapplock" in s or "CREATE" in s or "UPDATE" in s for s in log)
    assert outcome.counts["create"] > 0


def test_a_connection_that_lands_in_master_is_refused_before_anything_changes(
    project: Project, server, monkeypatch
) -> None:
    conn = server["conn"] = Connection()
    monkeypatch.setattr(conn, "answer", lambda sql, params=(), answer=conn.answer: [("master",)]
                        if "DB_NAME()" in sql else answer(sql, params))
    with pytest.raises(PreflightFailed, match="refused before any change"):
        deploy(project.root, TARGET)
    assert not any("sp_getapplock" in s or "CREATE" in s for s in sql_log(conn))


def test_a_message_number_holding_another_applications_text_stops_the_deploy_before_any_change(
    project: Project, server
) -> None:
    conn = server["conn"] = Connection()
    conn.messages = [(59002, 16, "Order %d is locked")]
    console = Console(record=True, width=200)
    with pytest.raises(PreflightFailed):
        deploy(project.root, TARGET, console=console)
    assert "problem: message 59002 holds another application's text" in console.export_text()
    assert not any("sp_getapplock" in s or "CREATE" in s or "sp_addmessage" in s for s in sql_log(conn))


def test_a_dry_run_into_a_database_to_create_creates_nothing(project: Project, server) -> None:
    conn = server["conn"] = Connection()  # the preflight finds the database
    deploy(project.root, TARGET, create_db="relq_db", dry_run=True)
    log = sql_log(conn)
    assert not any("CREATE DATABASE" in s or s.startswith("SELECT DB_ID(?)") for s in log)


def test_a_dry_run_prints_the_preflight_and_the_plan(project: Project, server) -> None:
    server["conn"] = Connection()
    console = Console(record=True, width=200)
    deploy(project.root, TARGET, dry_run=True, console=console)
    text = console.export_text()
    assert "preflight:" in text and "READ_COMMITTED_SNAPSHOT OFF" in text
    assert "deploy plan for database relq_db" in text


def test_a_message_runs_as_a_registration_that_checks_the_number_first(project: Project, server) -> None:
    conn = server["conn"] = Connection()
    deploy(project.root, TARGET)
    (registration,) = [s for s in sql_log(conn) if "sp_addmessage @msgnum = 59001" in s]
    assert registration.index("FROM sys.messages") < registration.index("THROW 50000")


def test_messages_another_deploy_registered_while_this_one_waited_for_the_lock_are_not_run_again(
    project: Project, server
) -> None:
    """As when two deploys start at once: the second's preflight finds the messages missing, and
    once it holds the lock the first has registered them (and journaled every file)."""
    result = project.build()
    conn = server["conn"] = Connection(journal={p: result.sources[p].checksum for p in result.order})
    conn.messages_once_locked = [(n, m.severity, m.text) for n, m in project_messages(result.facts).items()]
    outcome = deploy(project.root, TARGET)
    assert not any("sp_addmessage" in s for s in sql_log(conn))
    assert outcome.plan.changes == []


REVALIDATES = revalidates("~1,234,567 rows")


def with_changed_check_function(project: Project) -> dict[str, str]:
    """The journal of a database that has every file, then a change to the function
    the CHECK constraint Job_HasKnown_Status calls."""
    result = project.build()
    journal = {p: result.sources[p].checksum for p in result.order}
    project.edit(FN, "RETURN 0;", "RETURN CAST(0 AS BIT);")
    return journal


def test_a_dry_run_names_the_table_a_check_re_validates_with_its_row_count(project: Project, server) -> None:
    conn = server["conn"] = Connection(with_changed_check_function(project))
    conn.rows = {"dbo.Job": 1234567}
    console = Console(record=True, width=400)
    deploy(project.root, TARGET, dry_run=True, console=console)
    assert f"  alter  dbo.JobIsKnown_fn  ({FN}): {REVALIDATES}\n" in console.export_text()
    counted = [e for e in conn.log if e[0] == "sql" and "FROM sys.partitions" in e[1]]
    assert [params for _, _, params in counted] == [("dbo.Job",)]  # once, for the one table


def test_a_dry_run_on_a_first_deploy_says_the_table_has_nothing_to_re_validate(
    project: Project, server
) -> None:
    server["conn"] = Connection()  # no journal, no tables
    console = Console(record=True, width=400)
    deploy(project.root, TARGET, dry_run=True, console=console)
    assert (f"create  dbo.JobIsKnown_fn  ({FN}): CHECK Job_HasKnown_Status on dbo.Job: the table "
            f"does not exist yet, nothing to re-validate") in console.export_text()


class Screen:
    """A console's file that writes into the connection's log, so that a test sees what
    was printed in order with what was sent."""

    def __init__(self, log: list[tuple]) -> None:
        self.log = log

    def write(self, text: str) -> int:
        self.log += [("printed", line) for line in text.splitlines() if line]
        return len(text)

    def flush(self) -> None:
        pass


def test_a_deploy_prints_what_a_step_re_validates_before_it_drops_the_constraint(
    project: Project, server
) -> None:
    conn = server["conn"] = Connection(with_changed_check_function(project))
    conn.rows = {"dbo.Job": 1234567}
    deploy(project.root, TARGET, console=Console(file=Screen(conn.log), width=400))
    printed = conn.log.index(("printed", f"alter  dbo.JobIsKnown_fn  ({FN}): {REVALIDATES}"))
    dropped = next(i for i, e in enumerate(conn.log)
                   if e[0] == "sql" and "ALTER TABLE [dbo].[Job] DROP CONSTRAINT" in e[1])
    assert printed < dropped
    assert conn.log[dropped + 1:].count(("printed", "alter   dbo.JobIsKnown_fn")) == 1  # and when done


def test_a_deploy_prints_no_re_validation_where_the_table_does_not_exist_yet(
    project: Project, server
) -> None:
    conn = server["conn"] = Connection()
    deploy(project.root, TARGET, console=Console(file=Screen(conn.log), width=400))
    printed = [e[1] for e in conn.log if e[0] == "printed"]
    assert "create  dbo.JobIsKnown_fn" in printed
    assert not any("re-validate" in text for text in printed)


def test_the_check_asks_the_server_and_reads_only_the_message_files(project: Project, server) -> None:
    """`invoke deploy --check` parses database/messages alone: a view that does not parse,
    or a project of many queues, neither stops nor slows the questions to the server."""
    project.edit("database/views/dbo.Worker_Job_V.sql", "FROM dbo.Job", "FROM (")
    server["conn"] = conn = Connection()
    verdict = check(project.root, TARGET, console=Console(file=io.StringIO()))
    assert verdict.ok  # a build would have stopped at the view: "the build has 1 problem(s)"
    (asked,) = [e[1] for e in conn.log if e[0] == "sql" and "FROM sys.messages" in e[1]]
    assert "59001, 59002, 59003" in asked  # the fixture's messages, read from their files


def test_an_unreachable_server_is_said_before_the_project_is_parsed(project: Project, monkeypatch) -> None:
    def unreachable(conn_str: str, **_) -> Connection:
        raise RelqError("cannot reach the server")

    monkeypatch.setattr(db, "connect", unreachable)
    monkeypatch.setattr("relq.deploy.apply.message_facts", lambda root: pytest.fail("parsed first"))
    monkeypatch.setattr("relq.deploy.apply.build", lambda *a, **k: pytest.fail("built first"))
    for run in (check, deploy):
        with pytest.raises(RelqError, match="cannot reach the server"):
            run(project.root, TARGET, console=Console(file=io.StringIO()))


# -- bounded lock waits: a file whose statement cannot get its locks is rolled back and tried again ---

ALTER_JOB = "ALTER TABLE dbo.Job ADD Priority"  # the batch of add_priority's migration that locks dbo.Job


@pytest.fixture
def pauses(monkeypatch) -> list[float]:
    """The pauses between tries, recorded instead of slept."""
    slept: list[float] = []
    monkeypatch.setattr("relq.deploy.apply._pause", slept.append)
    return slept


def with_priority_migration(project: Project) -> Connection:
    """A deployed fixture project (dbo.Job holding 3 rows), then add_priority's change: the
    migration alters dbo.Job."""
    result = project.build()
    conn = Connection({p: result.sources[p].checksum for p in result.order})
    conn.rows = {"dbo.Job": 3}
    add_priority(project)
    return conn


def records_of(conn: Connection, path: str) -> list[tuple]:
    """The journal rows written for ``path`` (journal.record's parameters: kind, checksum,
    version, path, ...)."""
    return [e for e in conn.log if e[0] == "sql" and e[1].startswith("SET NOCOUNT ON; UPDATE relq.Deploy")
            and e[2][3] == path]


@pytest.mark.parametrize("trancount", [1, 0])  # 0: the file set XACT_ABORT ON, the server rolled it back
def test_a_file_whose_statement_waits_out_the_lock_wait_twice_is_rolled_back_and_run_again(
    project: Project, server, pauses, trancount: int
) -> None:
    conn = server["conn"] = with_priority_migration(project)
    conn.lock_timeouts = {ALTER_JOB: 2}
    conn.trancount = trancount
    conn.holders = [(57, "dbo.Job", "IU", "app_orders", "web1", 1, None)]
    console = Console(record=True, width=400)
    outcome = deploy(project.root, TARGET, statement_lock_wait=2, console=console)
    assert outcome.counts["migration"] == 1
    assert pauses == [1, 2]  # two retries, each after a short pause
    assert len(records_of(conn, MIGRATION)) == 1  # journaled once, by the try that committed
    tries = [i for i, e in enumerate(conn.log) if e[0] == "sql" and ALTER_JOB in e[1]]
    assert len(tries) == 3
    for at in tries:  # each try: the lock wait set again, then the file in a transaction of its own
        began = max(i for i in range(at) if conn.log[i] == ("autocommit", False))
        assert conn.log[began - 1] == ("sql", "SET LOCK_TIMEOUT 2000;", ())
    assert conn.log.count(("rollback",)) == (2 if trancount else 0)  # the server's rollback is not repeated
    text = console.export_text()
    assert (f"{MIGRATION}:4: waited 2 s for a lock on dbo.Job; held by session 57 (app_orders@web1, idle in "
            f"an open transaction; IU on dbo.Job); rolled back, trying again in 1 s (1 of 3 retries)") in text
    assert "(2 of 3 retries)" in text and "(3 of 3 retries)" not in text


def test_a_file_whose_statement_never_gets_its_locks_stops_the_deploy_in_one_line(
    project: Project, server, pauses
) -> None:
    conn = server["conn"] = with_priority_migration(project)
    conn.lock_timeouts = {ALTER_JOB: -1}
    conn.holders = [(57, "dbo.Job", "IU", "app_orders", "web1", 1, None),
                    (61, "dbo.Job", "IX", "app_orders", "web2", 1, "UPDATE ")]
    with pytest.raises(DeployFailed) as failed:
        deploy(project.root, TARGET, statement_lock_wait=5)
    assert str(failed.value) == (
        f"{MIGRATION}:4: could not lock dbo.Job within 5 s, 4 times (SQL Server error 1222); held by "
        f"session 57 (app_orders@web1, idle in an open transaction; IU on dbo.Job), session 61 "
        f"(app_orders@web2, running UPDATE; IX on dbo.Job); nothing of this file was applied (rolled "
        f"back), and the next deploy resumes here")
    assert pauses == [1, 2, 4]
    assert records_of(conn, MIGRATION) == []  # the journal row is in the file's transaction: none
    assert conn.log.count(("rollback",)) == 4  # every try rolled back
    began = max(i for i, e in enumerate(conn.log) if e == ("autocommit", False))
    assert ("commit",) not in conn.log[began:]
    assert conn.log[-1] == ("close",)  # closing the session ends the deploy lock


def test_a_login_that_cannot_see_the_lock_holders_is_told_the_permission_that_shows_them(
    project: Project, server, pauses
) -> None:
    conn = server["conn"] = with_priority_migration(project)
    conn.lock_timeouts = {ALTER_JOB: -1}
    conn.holders_hidden = True
    with pytest.raises(DeployFailed) as failed:
        deploy(project.root, TARGET)
    assert (f"(SQL Server error 1222); the sessions holding them are not visible to this login: "
            f"{HOLDERS_PERMISSION} shows them; nothing of this file") in str(failed.value)
    assert "\n" not in str(failed.value)


def test_a_statement_that_times_out_after_the_connection_failed_is_not_tried_again(
    project: Project, server, pauses
) -> None:
    conn = server["conn"] = with_priority_migration(project)
    conn.lock_timeouts = {ALTER_JOB: -1}
    conn.trancount = None  # @@TRANCOUNT cannot be asked: the link is gone
    with pytest.raises(DeployFailed) as failed:
        deploy(project.root, TARGET)
    assert pauses == []
    assert "1 time (SQL Server error 1222); nothing of this file was committed (the connection failed" in str(
        failed.value)


def test_every_file_runs_under_the_statement_lock_wait_set_just_before_it(project: Project, server) -> None:
    conn = server["conn"] = Connection()
    outcome = deploy(project.root, TARGET, statement_lock_wait=7)
    starts = [i for i, e in enumerate(conn.log) if e[0] == "autocommit" and i > 0
              and conn.log[i - 1][0] == "sql" and conn.log[i - 1][1] == "SET LOCK_TIMEOUT 7000;"]
    assert len(starts) == len([s for s in outcome.plan.steps if s.runs])  # one per file, messages included


@pytest.mark.parametrize("edition, online", [(3, 1), (8, 1), (2, 0), (4, 0)])
def test_the_deploy_tells_the_migrations_whether_the_edition_builds_indexes_online(
    project: Project, server, edition: int, online: int
) -> None:
    conn = server["conn"] = Connection()
    conn.edition = edition  # Enterprise or Developer, Managed Instance, Standard, Express
    deploy(project.root, TARGET)
    (told,) = [e for e in conn.log if e[0] == "sql" and "sp_set_session_context" in e[1]]
    assert told[2] == (ONLINE_KEY, online)
    assert conn.log.index(told) < next(i for i, e in enumerate(conn.log) if e == ("autocommit", False))


def test_a_dry_run_names_the_table_a_migration_alters_with_its_row_count(project: Project, server) -> None:
    server["conn"] = with_priority_migration(project)
    console = Console(record=True, width=400)
    deploy(project.root, TARGET, dry_run=True, console=console)
    assert (f"  apply     V0001__add_job_priority.sql  ({MIGRATION}): {altered('~3 rows')}\n"
            in console.export_text())


@pytest.mark.parametrize("edition, online", [(3, True), (2, False)])
def test_a_dry_run_says_whether_a_migrations_index_is_built_online(
    project: Project, server, edition: int, online: bool
) -> None:
    result = project.build()
    conn = server["conn"] = Connection({p: result.sources[p].checksum for p in result.order})
    conn.rows, conn.edition = {"dbo.Job": 1234}, edition
    add_attempts_index(project)
    console = Console(record=True, width=400)
    deploy(project.root, TARGET, dry_run=True, console=console)
    assert (f"  apply     V0002__index_job_attempts.sql  ({INDEX_MIGRATION}): "
            f"{indexed('~1,234 rows', online)}\n") in console.export_text()
