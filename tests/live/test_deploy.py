"""invoke deploy against a real SQL Server (RELQ_MSSQL). Each test deploys a copy
of the clean fixture project into a database of its own."""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Iterator

import pytest
from rich.console import Console

from relq import db
from relq.compiler.messages import register_sql
from relq.deploy.apply import LOCK_RETRIES, ONLINE_EDITIONS, RETRY_PAUSES_S, DeployFailed, deploy
from relq.deploy.preflight import PreflightFailed
from tests.conftest import HEADER, Project
from tests.deploy.fixture_changes import (
    DATA,
    FN,
    INDEX_MIGRATION,
    JOB,
    MIGRATION,
    PRIORITY_CHANGES,
    VIEW,
    add_attempts_index,
    add_priority,
    altered,
    indexed,
    revalidates,
)

pytestmark = pytest.mark.mssql

# A second batch for DATA: a run-time error (a string cut short: 2628, or 8152 before
# SQL Server 2019) under XACT_ABORT, which rolls the transaction back on the server.
TOO_LONG_STATUS = """SET XACT_ABORT ON;
MERGE dbo.JobStatus AS target
USING (VALUES (REPLICATE('x', 40))) AS source ([Status])
    ON target.[Status] = source.[Status]
WHEN NOT MATCHED BY TARGET THEN
    INSERT ([Status]) VALUES (source.[Status]);
GO
"""


def rows(target: db.Target, database: str, sql: str, *params) -> list[tuple]:
    conn = db.connect(db.with_database(target.conn_str, database))
    try:
        return db.query(conn.cursor(), sql, *params)
    finally:
        conn.close()


def journal(target: db.Target, database: str) -> dict[str, str]:
    return dict(rows(target, database, "SELECT [Path], Checksum FROM relq.DeployJournal;"))


def test_a_second_deploy_changes_nothing(project: Project, mssql, new_database: str) -> None:
    first = deploy(project.root, mssql, create_db=new_database)
    second = deploy(project.root, mssql, create_db=new_database)
    assert first.counts["create"] > 0
    assert second.plan.changes == []
    result = project.build()
    assert journal(mssql, new_database) == {p: result.sources[p].checksum for p in result.order}
    assert rows(mssql, new_database, "SELECT OBJECT_ID(N'dbo.Next_Job_trx', N'P');")[0][0] is not None
    owner = rows(mssql, "master", "SELECT SUSER_SNAME(d.owner_sid), SUSER_SNAME(0x01) "
                                  "FROM sys.databases AS d WHERE d.name = ?;", new_database)
    assert owner[0][0] == owner[0][1], "the database --create-db made belongs to sa, not the deploying login"


def test_two_deploys_at_once_take_turns(project: Project, mssql, new_database: str) -> None:
    outcomes, errors = [], []

    def run() -> None:
        try:
            outcomes.append(deploy(project.root, mssql, create_db=new_database))
        except Exception as exc:  # reported below, with the other thread's result
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    assert not any(t.is_alive() for t in threads), "a deploy is still running"
    assert errors == []
    changes = sorted(len(o.plan.changes) for o in outcomes)
    assert changes[0] == 0 and changes[1] == len(project.build().order)


def test_a_failed_batch_stops_the_deploy_and_the_next_one_resumes(
    project: Project, mssql, new_database: str
) -> None:
    # The build cannot see a SELECT of a column the table lacks; SQL Server can.
    project.edit(VIEW, "j.UpdatedAt AS Token", "j.UpdatedOn AS Token")
    with pytest.raises(DeployFailed) as failed:
        deploy(project.root, mssql, create_db=new_database)
    message = str(failed.value)
    assert message.startswith(f"{VIEW}:")
    assert "207" in message and "UpdatedOn" in message
    assert "nothing of this file was applied" in message
    order = project.build().order
    done = journal(mssql, new_database)
    assert set(done) == set(order[: order.index(VIEW)])  # everything before the view, nothing after
    project.edit(VIEW, "j.UpdatedOn AS Token", "j.UpdatedAt AS Token")
    resumed = deploy(project.root, mssql, create_db=new_database)
    assert [s.path for s in resumed.plan.changes] == order[order.index(VIEW):]
    assert set(journal(mssql, new_database)) == set(order)


def test_a_file_that_xact_abort_rolled_back_on_the_server_is_reported_as_not_applied(
    project: Project, mssql, new_database: str
) -> None:
    """Under XACT_ABORT a run-time error rolls the whole transaction back on the
    server: the file's first batch is undone too, and the message says so."""
    project.write(DATA, project.read(DATA) + TOO_LONG_STATUS)
    with pytest.raises(DeployFailed) as failed:
        deploy(project.root, mssql, create_db=new_database)
    message = str(failed.value)
    assert message.startswith(f"{DATA}:")
    assert "nothing of this file was applied (the server had rolled it back)" in message
    assert rows(mssql, new_database, "SELECT COUNT(*) FROM dbo.JobStatus;") == [(0,)]  # batch 1 undone
    assert DATA not in journal(mssql, new_database)


def test_a_function_a_check_calls_is_altered_around_its_constraint(
    project: Project, mssql, new_database: str
) -> None:
    deploy(project.root, mssql, create_db=new_database)
    conn = db.connect(db.with_database(mssql.conn_str, new_database))
    try:
        db.query(conn.cursor(), "INSERT INTO dbo.Job ([Status], ScheduledFor, UpdatedAt) VALUES "
                                + ", ".join(["('Pending', SYSUTCDATETIME(), SYSUTCDATETIME())"] * 3) + ";")
    finally:
        conn.close()
    project.edit(FN, "    RETURN 0;\nEND;", "    RETURN 0; -- changed\nEND;")
    # The plan, and the deploy before the step, name the table the re-added CHECK scans.
    revalidation = f"alter  dbo.JobIsKnown_fn  ({FN}): {revalidates('~3 rows')}"
    planned = Console(record=True, width=400)
    deploy(project.root, mssql, create_db=new_database, dry_run=True, console=planned)
    assert revalidation in planned.export_text()
    shown = Console(record=True, width=400)
    outcome = deploy(project.root, mssql, create_db=new_database, console=shown)
    assert revalidation in shown.export_text()
    assert [(s.path, s.action) for s in outcome.plan.changes] == [(FN, "alter")]
    definition = rows(mssql, new_database, "SELECT OBJECT_DEFINITION(OBJECT_ID(N'dbo.JobIsKnown_fn'));")
    assert "-- changed" in definition[0][0]
    trusted = rows(mssql, new_database, "SELECT is_not_trusted, is_disabled FROM sys.check_constraints "
                                        "WHERE name = N'Job_HasKnown_Status';")
    assert trusted == [(False, False)]


def test_a_migration_runs_once(project: Project, mssql, new_database: str) -> None:
    deploy(project.root, mssql, create_db=new_database)
    add_priority(project)
    applied = deploy(project.root, mssql, create_db=new_database)
    assert [(s.path, s.action) for s in applied.plan.changes] == PRIORITY_CHANGES
    assert rows(mssql, new_database, "SELECT COL_LENGTH(N'dbo.Job', N'Priority');")[0][0] is not None
    again = deploy(project.root, mssql, create_db=new_database)
    assert again.plan.changes == []
    assert journal(mssql, new_database)[JOB] == project.build().sources[JOB].checksum


def test_the_project_itself_deploys_twice(mssql, new_database: str) -> None:
    from tests.conftest import REPO

    assert deploy(REPO, mssql, create_db=new_database).counts["create"] > 0
    assert deploy(REPO, mssql, create_db=new_database).plan.changes == []


# -- bounded lock waits: a deploy gives way to the application's transactions ----------------------

WAIT = 1  # --statement-lock-wait of these tests, in seconds


def insert_jobs(target: db.Target, database: str, count: int) -> list[int]:
    """``count`` Pending jobs in dbo.Job; their keys."""
    conn = db.connect(db.with_database(target.conn_str, database))
    try:
        cursor = conn.cursor()
        return [db.query(cursor, "SET NOCOUNT ON; INSERT INTO dbo.Job ([Status], ScheduledFor, UpdatedAt) "
                                 "VALUES ('Pending', SYSUTCDATETIME(), SYSUTCDATETIME()); "
                                 "SELECT CAST(SCOPE_IDENTITY() AS BIGINT);")[0][0] for _ in range(count)]
    finally:
        conn.close()


def test_a_deploy_that_cannot_lock_a_queue_table_changes_nothing_and_succeeds_once_the_lock_is_gone(
    project: Project, mssql, new_database: str
) -> None:
    """Another session holds a job row as a claim does (UPDLOCK, in an open transaction): the
    migration's ALTER TABLE cannot get its schema-modification lock. The deploy gives up after
    each try's lock wait, rolls the file back each time, and stops naming the file, the table
    and the session; the other session's transaction goes on untouched. Once it commits, the
    same deploy goes through."""
    deploy(project.root, mssql, create_db=new_database)
    (job,) = insert_jobs(mssql, new_database, 1)
    add_priority(project)
    before = journal(mssql, new_database)
    holder = db.connect(db.with_database(mssql.conn_str, new_database))
    try:
        with db.transaction(holder):
            cursor = holder.cursor()
            spid = db.query(cursor, "SELECT @@SPID;")[0][0]
            db.query(cursor, "SELECT JobId FROM dbo.Job WITH (UPDLOCK, ROWLOCK) WHERE JobId = ?;", job)
            started = time.monotonic()
            with pytest.raises(DeployFailed) as failed:
                deploy(project.root, mssql, create_db=new_database, statement_lock_wait=WAIT)
            took = time.monotonic() - started
            # The holder's work goes on in its own transaction, which the deploy left alone.
            db.query(cursor, "UPDATE dbo.Job SET Attempts = Attempts + 1 WHERE JobId = ?;", job)
            assert db.query(cursor, "SELECT @@TRANCOUNT;") == [(1,)]
    finally:
        holder.close()
    tries = LOCK_RETRIES + 1
    waited = tries * WAIT + sum(RETRY_PAUSES_S[:LOCK_RETRIES])
    assert waited <= took < waited + 60  # the tries' lock waits and pauses, the preflight and build besides
    message = str(failed.value)
    assert "\n" not in message
    assert message.startswith(f"{MIGRATION}:4: could not lock dbo.Job within {WAIT} s, {tries} times "
                              f"(SQL Server error 1222); held by session {spid} (")
    assert "idle in an open transaction; IU on dbo.Job)" in message  # UPDLOCK on a row: IU on its table
    assert "; nothing of this file was applied (" in message
    assert message.endswith("the next deploy resumes here")
    assert rows(mssql, new_database, "SELECT COL_LENGTH(N'dbo.Job', N'Priority');") == [(None,)]
    assert journal(mssql, new_database) == before
    assert rows(mssql, new_database, "SELECT Attempts FROM dbo.Job WHERE JobId = ?;", job) == [(1,)]
    applied = deploy(project.root, mssql, create_db=new_database, statement_lock_wait=WAIT)
    assert [(s.path, s.action) for s in applied.plan.changes] == PRIORITY_CHANGES
    assert rows(mssql, new_database, "SELECT COL_LENGTH(N'dbo.Job', N'Priority');")[0][0] is not None
    assert journal(mssql, new_database)[MIGRATION] == project.build().sources[MIGRATION].checksum


# A migration that records what the deploy told it: SESSION_CONTEXT(N'relq.online').
NOTE_ONLINE = "database/migrations/V0003__note_online.sql"
NOTE_ONLINE_SQL = HEADER + """/* V0003__note_online: a status named for what the deploy told it. */
IF NOT EXISTS (SELECT 1 FROM dbo.JobStatus WHERE [Status] LIKE 'online=%')
    BEGIN
        INSERT INTO dbo.JobStatus ([Status])
        VALUES ('online=' + ISNULL(CAST(CAST(SESSION_CONTEXT(N'relq.online') AS INT) AS VARCHAR(1)), '?'));
    END;
GO
"""


def test_a_migrations_index_is_built_online_where_the_edition_has_online_index_operations(
    project: Project, mssql, new_database: str
) -> None:
    """The plan says online or offline as the server's edition allows, the deploy tells the
    migrations the same, and the pattern's index is there either way."""
    deploy(project.root, mssql, create_db=new_database)
    insert_jobs(mssql, new_database, 3)
    add_attempts_index(project)
    project.write(NOTE_ONLINE, NOTE_ONLINE_SQL)
    edition = rows(mssql, "master", "SELECT CAST(SERVERPROPERTY('EngineEdition') AS INT);")[0][0]
    online = edition in ONLINE_EDITIONS
    planned = Console(record=True, width=400)
    deploy(project.root, mssql, create_db=new_database, dry_run=True, console=planned)
    assert f"({INDEX_MIGRATION}): {indexed('~3 rows', online)}\n" in planned.export_text()
    deploy(project.root, mssql, create_db=new_database)
    assert rows(mssql, new_database, "SELECT COUNT(*) FROM sys.indexes WHERE name = N'IX_Job_Attempts' "
                                     "AND object_id = OBJECT_ID(N'dbo.Job');") == [(1,)]
    told = rows(mssql, new_database, "SELECT [Status] FROM dbo.JobStatus WHERE [Status] LIKE 'online=%';")
    assert told == [(f"online={int(online)}",)]


def test_a_dry_run_names_the_queue_table_a_migration_alters_with_its_rows(
    project: Project, mssql, new_database: str
) -> None:
    deploy(project.root, mssql, create_db=new_database)
    insert_jobs(mssql, new_database, 2)
    add_priority(project)
    planned = Console(record=True, width=400)
    deploy(project.root, mssql, create_db=new_database, dry_run=True, console=planned)
    assert f"({MIGRATION}): {altered('~2 rows')}\n" in planned.export_text()


# -- the preflight: what stops a deploy before any change ----------------------------------------

PLAIN_LOGIN_KEYS = frozenset({"uid", "user id", "pwd", "password", "trusted_connection", "authentication"})


def first_message(project: Project):
    """The fixture project's lowest message number and its definition."""
    result = project.build()
    return min(((int(d.name), d) for f in result.facts.values() for d in f.definitions
                if d.kind == "message"), key=lambda pair: pair[0])


def in_master(target: db.Target, sql: str) -> None:
    conn = db.connect(db.with_database(target.conn_str, "master"))
    try:
        db.run_batch(conn.cursor(), sql)
    finally:
        conn.close()


def test_a_foreign_message_in_relqs_numbers_stops_the_deploy_before_any_change(
    project: Project, mssql, new_database: str
) -> None:
    number, message = first_message(project)
    foreign = "Order %d is locked by the billing application"
    in_master(mssql, f"IF EXISTS (SELECT 1 FROM sys.messages WHERE message_id = {number}) "
                     f"EXEC sys.sp_dropmessage @msgnum = {number}, @lang = 'all'; "
                     f"EXEC sys.sp_addmessage @msgnum = {number}, @severity = 16, @msgtext = N'{foreign}', "
                     f"@lang = 'us_english';")
    try:
        with pytest.raises(PreflightFailed):
            deploy(project.root, mssql, create_db=new_database)
        assert rows(mssql, "master", "SELECT DB_ID(?);", new_database) == [(None,)]  # not even created
        # dist/deploy.sql, run by hand, refuses the same number in its own batch.
        with pytest.raises(db.SqlError) as refused:
            in_master(mssql, register_sql(message))
        assert refused.value.number == 50000
        assert f"message {number} holds another application's text" in refused.value.text
        assert rows(mssql, "master", "SELECT [text] FROM sys.messages WHERE message_id = ? "
                                     "AND language_id = 1033;", number) == [(foreign,)]
    finally:
        in_master(mssql, f"IF EXISTS (SELECT 1 FROM sys.messages WHERE message_id = {number}) "
                         f"EXEC sys.sp_dropmessage @msgnum = {number}, @lang = 'all';")


@pytest.fixture
def plain_login(mssql) -> Iterator[tuple[str, db.Target]]:
    """A SQL login of no server role, with the live tier's server: (its name, a target that
    connects as it). Dropped afterwards, with any session of it still open."""
    if rows(mssql, "master", "SELECT CAST(SERVERPROPERTY('IsIntegratedSecurityOnly') AS INT);") == [(1,)]:
        pytest.skip("the server accepts Windows logins only: no SQL login can be made for this test")
    login, password = f"relq_plain_{secrets.token_hex(4)}", secrets.token_urlsafe(18) + "aA1!"
    in_master(mssql, f"CREATE LOGIN [{login}] WITH PASSWORD = N'{password}', CHECK_POLICY = OFF;")
    try:
        pairs = [(k, v) for k, v in db.parse(mssql.conn_str) if k.casefold() not in PLAIN_LOGIN_KEYS]
        yield login, db.Target(db.build([*pairs, ("UID", login), ("PWD", password)]), "test")
    finally:  # a pooled connection of the login may still be open: end it first
        in_master(mssql, f"""
            DECLARE @Kill NVARCHAR(MAX) = N'';
            SELECT @Kill += N'KILL ' + CAST(s.session_id AS NVARCHAR(10)) + N'; '
            FROM sys.dm_exec_sessions AS s WHERE s.login_name = N'{login}';
            EXEC sys.sp_executesql @Kill;
            IF EXISTS (SELECT 1 FROM sys.server_principals WHERE name = N'{login}') DROP LOGIN [{login}];""")


def test_a_login_without_serveradmin_deploys_once_the_messages_are_registered_and_not_before(
    project: Project, mssql, new_database: str, plain_login
) -> None:
    """A db_owner who is not serveradmin: refused while a message is missing (it could not
    register it), and able to deploy when every message is there as the project has it."""
    number, _ = first_message(project)
    login, plain = plain_login
    deploy(project.root, mssql, create_db=new_database)  # as the live tier's sysadmin
    rows(mssql, new_database, f"CREATE USER [{login}] FOR LOGIN [{login}]; "
                              f"ALTER ROLE db_owner ADD MEMBER [{login}]; SELECT 1;")
    project.edit(VIEW, "/* dbo.Worker_Job_V", "/* changed: dbo.Worker_Job_V")
    before = journal(mssql, new_database)
    in_master(mssql, f"EXEC sys.sp_dropmessage @msgnum = {number}, @lang = 'all';")
    console = Console(record=True, width=300)
    with pytest.raises(PreflightFailed):
        deploy(project.root, plain, create_db=new_database, console=console)
    assert f"problem: login {login} may not register messages" in console.export_text()
    assert journal(mssql, new_database) == before  # the changed view was not deployed
    deploy(project.root, mssql, create_db=new_database)  # a sysadmin registers it again
    outcome = deploy(project.root, plain, create_db=new_database)
    assert outcome.plan.changes == []  # the sysadmin's deploy took the view too
    project.edit(VIEW, "/* changed: dbo.Worker_Job_V", "/* changed again: dbo.Worker_Job_V")
    assert [s.path for s in deploy(project.root, plain, create_db=new_database).plan.changes] == [VIEW]


def test_a_login_that_is_not_db_owner_is_refused_before_any_change(
    project: Project, mssql, new_database: str, plain_login
) -> None:
    """A user of the database without db_owner, then a login with no user there at all, then
    one that may not create the database: each refused by the preflight, naming the grant,
    before the deploy changes anything (it would have stopped half-way, at the first role)."""
    login, plain = plain_login
    deploy(project.root, mssql, create_db=new_database)
    project.edit(VIEW, "/* dbo.Worker_Job_V", "/* changed: dbo.Worker_Job_V")
    before = journal(mssql, new_database)
    for setup in ("", f"CREATE USER [{login}] FOR LOGIN [{login}]; ALTER ROLE db_datareader ADD MEMBER "
                      f"[{login}]; "):
        if setup:
            rows(mssql, new_database, setup + "SELECT 1;")
        console = Console(record=True, width=300)
        with pytest.raises(PreflightFailed):
            deploy(project.root, plain, create_db=new_database, console=console)
        assert f"problem: login {login} does not control database {new_database}" in console.export_text()
        assert journal(mssql, new_database) == before
    console = Console(record=True, width=300)
    missing = f"{new_database}_not_yet"
    with pytest.raises(PreflightFailed):
        deploy(project.root, plain, create_db=missing, console=console)
    assert f"problem: login {login} may not create database {missing}" in console.export_text()
    assert rows(mssql, "master", "SELECT DB_ID(?);", missing) == [(None,)]
