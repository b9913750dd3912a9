"""Applying a plan: file by file, each in its own transaction with its journal
row, under an application lock so that two deploys at once take turns.

Every statement the deploy sends waits a bounded time for a lock (``statement_lock_wait``,
SET LOCK_TIMEOUT: "the number of milliseconds a statement waits for a lock to be released";
-1, the default of every connection, waits forever,
https://learn.microsoft.com/sql/t-sql/statements/set-lock-timeout-transact-sql). A schema
change that waits behind a claim's, a drain's or a producer's open transaction would make
every later query on its table queue behind its own waiting request; bounded, it gives up
instead. The timed-out statement alone is cancelled: "Any transaction containing the
statement, however, is not rolled back or canceled by SQL Server" (error 1222, Customizing
the Lock Time-Out,
https://learn.microsoft.com/previous-versions/sql/sql-server-2008-r2/ms177413(v=sql.105)),
unless the file set XACT_ABORT ON, under which "any run-time statement error causes an
automatic rollback of the current transaction" (Transaction locking and row versioning guide,
https://learn.microsoft.com/sql/relational-databases/sql-server-transaction-locking-and-row-versioning-guide).
So the deploy ends the file's transaction itself, whichever happened (:func:`_undo`): the
whole file, journal row included, is undone, and the file is tried again, up to
LOCK_RETRIES times, before the deploy stops naming it, its tables and who held them.
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.progress import Progress

from relq import db
from relq.compiler import BuildResult, build, message_facts
from relq.compiler.emit import add_checks_sql, drop_checks_sql
from relq.compiler.messages import message_files, register_sql
from relq.compiler.names import quote
from relq.compiler.report import stderr_console
from relq.deploy import journal, preflight
from relq.deploy.batches import split_batches
from relq.deploy.plan import Plan, Step, format_plan, locked_tables, make_plan
from relq.errors import RelqError
from relq.progress import per_file

LOCK_RESOURCE = "relq.deploy"
# A table's approximate rows (NULL when it does not exist): sys.partitions.rows, the
# "approximate number of rows in this partition", of the heap or clustered index
# (https://learn.microsoft.com/sql/relational-databases/system-catalog-views/sys-partitions-transact-sql).
# It is catalog metadata any user who can see the table may read, where
# sys.dm_db_partition_stats requires VIEW DATABASE STATE
# (https://learn.microsoft.com/sql/relational-databases/system-dynamic-management-views/sys-dm-db-partition-stats-transact-sql).
ROW_COUNT = ("SELECT SUM(p.rows) FROM sys.partitions AS p "
             "WHERE p.object_id = OBJECT_ID(?, N'U') AND p.index_id IN (0, 1);")
_DATABASE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")

LOCK_TIMEOUT = 1222  # "Lock request time out period exceeded"
LOCK_RETRIES = 3  # a file whose statement timed out is tried this many times more
RETRY_PAUSES_S = (1, 2, 4)  # before each of those tries: the blocker's transaction may end meanwhile
# Online index operations: Enterprise, Developer and Evaluation (EngineEdition 3, "For
# Evaluation, Developer, and Enterprise editions",
# https://learn.microsoft.com/sql/t-sql/functions/serverproperty-transact-sql), not Standard
# (2) or Express (4) ("Online indexing", Editions and supported features of SQL Server 2022,
# https://learn.microsoft.com/sql/sql-server/editions-and-components-of-sql-server-2022), and
# Azure SQL Managed Instance (8; "Online index operations: Yes",
# https://learn.microsoft.com/azure/azure-sql/database/features-comparison).
ONLINE_EDITIONS = frozenset({3, 8})
ONLINE_KEY = "relq.online"  # SESSION_CONTEXT key a migration's index statements read
# The sessions that hold locks on a file's tables, read right after its statement timed out.
# sys.dm_tran_locks "requires VIEW SERVER STATE permission" on SQL Server and Managed Instance,
# VIEW SERVER PERFORMANCE STATE from SQL Server 2022
# (https://learn.microsoft.com/sql/relational-databases/system-dynamic-management-views/sys-dm-tran-locks-transact-sql);
# without it the query fails, and the deploy says which permission would name them.
# sys.dm_exec_sessions and sys.dm_exec_requests show a login without it its own session only
# (https://learn.microsoft.com/sql/relational-databases/system-dynamic-management-views/sys-dm-exec-requests-transact-sql).
# Any lock on a row or page comes with an intent lock on its table, so the OBJECT locks name
# every session that holds anything in it.
HOLDERS_SQL = """
SET NOCOUNT ON;
SELECT DISTINCT
    l.request_session_id,
    OBJECT_SCHEMA_NAME(l.resource_associated_entity_id) + N'.' + OBJECT_NAME(l.resource_associated_entity_id),
    l.request_mode,
    s.login_name,
    s.[host_name],
    s.open_transaction_count,
    r.command
FROM sys.dm_tran_locks AS l
LEFT JOIN sys.dm_exec_sessions AS s ON l.request_session_id = s.session_id
LEFT JOIN sys.dm_exec_requests AS r ON l.request_session_id = r.session_id
WHERE
    l.resource_type = N'OBJECT'
    AND l.resource_database_id = DB_ID()
    AND l.request_status = N'GRANTED'
    AND l.request_session_id <> @@SPID
    AND l.resource_associated_entity_id IN (
        SELECT OBJECT_ID(j.[value]) FROM OPENJSON(CAST(? AS NVARCHAR(MAX))) AS j
    )
ORDER BY 1, 2, 3;
"""
HOLDERS_PERMISSION = ("VIEW SERVER STATE (VIEW SERVER PERFORMANCE STATE suffices on SQL Server 2022 "
                      "and later)")


class DeployFailed(RelqError):
    """A batch failed: the file is rolled back, the journal holds every file before it."""


class LockWaitExceeded(DeployFailed):
    """A statement of the file waited longer than the statement lock wait (error 1222): the
    file's transaction is ended (``ended``: the server is known to hold nothing of it), so the
    file can be tried again on the same session, which keeps the deploy lock."""

    def __init__(self, where: str, undone: str, ended: bool) -> None:
        super().__init__(f"{where}: {undone}")
        self.where, self.undone, self.ended = where, undone, ended


@dataclass
class Outcome:
    plan: Plan
    counts: Counter[str]
    database: str


def deploy(root: Path, target: db.Target, *, create_db: str | None = None, dry_run: bool = False,
           deploy_wait: int = 600, statement_lock_wait: int = 5, db_owner: str | None = None,
           console: Console | None = None) -> Outcome:
    """Build the project, check the server (the preflight), then bring the target
    database up to the project. Nothing changes when the preflight finds a problem.
    ``deploy_wait``: seconds to wait for another deploy of the database to finish;
    ``statement_lock_wait``: seconds each statement may wait for a lock before its file is
    rolled back (and tried again, LOCK_RETRIES times); ``db_owner``: the login that owns a
    database ``create_db`` creates (see ensure_database)."""
    console = console or stderr_console()
    verdict, facts = _preflight(root, target, create_db, console)
    if not verdict.ok and not dry_run:
        raise _refused(verdict)
    result = _build(root, console)
    online = facts.engine_edition in ONLINE_EDITIONS
    conn_str = target.conn_str
    if create_db:
        if dry_run and not facts.exists:
            plan = make_plan(result, {}, verdict.to_register)
            return _show(console, plan, create_db, verdict, created=False, online=online)
        if not dry_run:  # a dry run creates nothing, even a database gone since the preflight
            ensure_database(conn_str, create_db, db_owner)
        conn_str = db.with_database(conn_str, create_db)
    conn = db.connect(conn_str)
    try:
        cursor = conn.cursor()
        if dry_run:
            _bound_lock_waits(cursor, statement_lock_wait)
            plan = make_plan(result, journal.read(cursor), verdict.to_register)
            return _show(console, plan, facts.database, verdict, created=True,
                         rows=row_counts(cursor, plan.changes), online=online)
        _lock(cursor, deploy_wait)
        _bound_lock_waits(cursor, statement_lock_wait)
        # What a migration's index statements read (docs/operations.md, Index builds); SESSION_CONTEXT
        # keeps it for the session (https://learn.microsoft.com/sql/t-sql/functions/session-context-transact-sql).
        db.query(cursor, "EXEC sys.sp_set_session_context @key = ?, @value = ?;", ONLINE_KEY, int(online))
        journal.ensure(cursor)
        to_register = preflight.still_to_register(cursor, preflight.project_messages(result.facts),
                                                  verdict.to_register)
        plan = make_plan(result, journal.read(cursor), to_register)
        apply(conn, plan, result, console, statement_lock_wait=statement_lock_wait, online=online)
        return Outcome(plan, plan.counts(), facts.database)
    finally:
        conn.close()  # ends the session, and with it the application lock


def check(root: Path, target: db.Target, *, create_db: str | None = None,
          console: Console | None = None) -> preflight.Verdict:
    """Only the preflight (`invoke deploy --check`): raises PreflightFailed on a problem.
    It reads the project's messages alone, not the whole project: the checks ask the server."""
    console = console or stderr_console()
    verdict, _ = _preflight(root, target, create_db, console)
    if not verdict.ok:
        raise _refused(verdict)
    return verdict


def _build(root: Path, console: Console) -> BuildResult:
    with per_file(console, "parsing") as on_parsed:
        result = build(root, write=False, on_parsed=on_parsed)
    if not result.ok:
        raise RelqError(f"the build has {len(result.diagnostics)} problem(s): run `invoke build` "
                        f"and fix them before deploying")
    return result


def _preflight(root: Path, target: db.Target, create_db: str | None,
               console: Console) -> tuple[preflight.Verdict, preflight.Facts]:
    """Ask the server, before anything changes (and before the project is parsed: a server
    that cannot be reached says so at once), and print what it said. With ``create_db``
    the questions go through master: the database may not exist yet."""
    console.print(f"target: {target}", markup=False)
    if create_db and not _DATABASE_NAME.match(create_db):
        raise RelqError(f"--create-db {create_db!r}: use letters, digits and underscores only")
    conn = db.connect(db.with_database(target.conn_str, "master") if create_db else target.conn_str)
    try:
        cursor = conn.cursor()
        database = create_db or db.query(cursor, "SELECT DB_NAME();")[0][0]
        messages = preflight.project_messages(message_facts(root))
        facts = preflight.read(cursor, database, sorted(messages))
    finally:
        conn.close()
    verdict = preflight.judge(facts, messages)
    console.print("preflight:")
    for text in verdict.lines():
        console.print("  " + text, markup=False)
    return verdict, facts


def _refused(verdict: preflight.Verdict) -> preflight.PreflightFailed:
    count = len(verdict.problems)
    return preflight.PreflightFailed(f"deploy refused before any change: the preflight found {count} "
                                     f"problem{'s' if count != 1 else ''} (above)")


def _show(console: Console, plan: Plan, database: str, verdict: preflight.Verdict, *,
          created: bool, rows: dict[str, int | None] | None = None, online: bool | None = None) -> Outcome:
    """Print the plan. ``rows``: the row counts of the tables a step locks as a whole (none
    in a database that does not exist yet); ``online``: whether the server has online index
    operations."""
    exists = "" if created else ", which does not exist yet"
    console.print(f"deploy plan for database {database}{exists} (dry run: nothing changes):")
    for text in format_plan(plan, rows or {}, online):
        console.print("  " + text, markup=False)
    if not verdict.ok:
        raise _refused(verdict)
    return Outcome(plan, plan.counts(), database)


def apply(conn, plan: Plan, result: BuildResult, console: Console, *, statement_lock_wait: int = 5,
          online: bool | None = None) -> None:
    """Run the steps that change something, with a progress bar on a terminal and
    a line per object either way. A file whose statement waited out the statement lock
    wait is rolled back and tried again (:func:`run_with_retries`)."""
    work = [s for s in plan.steps if s.runs]
    with Progress(console=console, transient=True, disable=not console.is_terminal) as progress:
        task = progress.add_task("deploying", total=len(work))
        for step in work:
            progress.update(task, description=step.path.rsplit("/", 1)[-1])
            rows = row_counts(conn.cursor(), [step])
            if any(count is not None for count in rows.values()):  # a scan or a lock to wait for: say why
                for text in format_plan(Plan([step]), rows, online):
                    progress.console.print(text, markup=False)
            run_with_retries(conn, step, step_sql(result, step), statement_lock_wait,
                             lambda text: progress.console.print(text, markup=False))
            progress.console.print(f"{step.action:<7} {', '.join(step.objects) or step.path}",
                                   markup=False)
            progress.advance(task)
    if plan.removed:
        for text in format_plan(Plan([], plan.removed)):
            console.print(text, markup=False)


def run_with_retries(conn, step: Step, text: str, statement_lock_wait: int, say) -> None:
    """Run ``step``, and again after a pause, up to LOCK_RETRIES times, while one of its
    statements waits out the lock wait; then fail in one line naming the file, its tables
    and the sessions that held them. Each try runs the whole file in one transaction, so a
    failed try leaves nothing of it, journal row included."""
    tries = LOCK_RETRIES + 1
    for attempt in range(1, tries + 1):
        try:
            run_step(conn, step, text, statement_lock_wait)
            return
        except LockWaitExceeded as exc:
            held = holders(conn, step) if exc.ended else ""
            if not exc.ended or attempt == tries:
                raise DeployFailed(
                    f"{exc.where}: could not lock {_named(step)} within {statement_lock_wait} s, "
                    f"{attempt} time{'s' if attempt != 1 else ''} (SQL Server error {LOCK_TIMEOUT})"
                    + (f"; {held}" if held else "") + f"; {exc.undone}, and the next deploy resumes "
                    f"here") from None
            pause = RETRY_PAUSES_S[min(attempt, len(RETRY_PAUSES_S)) - 1]
            say(f"{exc.where}: waited {statement_lock_wait} s for a lock on {_named(step)}; {held}; "
                f"rolled back, trying again in {pause} s ({attempt} of {LOCK_RETRIES} retries)")
            _pause(pause)


def _pause(seconds: float) -> None:
    time.sleep(seconds)


def _named(step: Step) -> str:
    """The tables a file locks as a whole, else those it names, else what it creates."""
    names = locked_tables(step) or list(step.tables) or list(step.objects) or [step.path]
    return ", ".join(names)


def holders(conn, step: Step) -> str:
    """Who holds locks on ``step``'s tables and objects now, read right after its statement
    timed out (the file's own locks are gone with its rollback): one text, or the permission
    that would show them."""
    names = list(dict.fromkeys(locked_tables(step) + list(step.tables) + list(step.objects)))
    try:
        rows = db.query(conn.cursor(), HOLDERS_SQL, json.dumps(names))
    except RelqError:
        return f"the sessions holding them are not visible to this login: {HOLDERS_PERMISSION} shows them"
    if not rows:
        return "no other session holds a lock on them now"
    sessions: dict[int, list] = {}
    for session, name, mode, login, host, open_tran, command in rows:
        entry = sessions.setdefault(session, [login, host, open_tran, command, []])
        entry[4].append(f"{mode} on {name}")
    texts = []
    for session, (login, host, open_tran, command, locks) in sessions.items():
        who = (login or "?") + (f"@{host}" if host else "")
        doing = (f"running {command.strip()}" if command else
                 "idle in an open transaction" if open_tran else "idle")
        texts.append(f"session {session} ({who}, {doing}; {', '.join(locks)})")
    return "held by " + ", ".join(texts)


def row_counts(cursor, steps: list[Step]) -> dict[str, int | None]:
    """Table -> its approximate row count, for each table one of ``steps`` locks as a whole
    (a migration's ALTER TABLE or index build, a re-validated CHECK); None for a table that
    does not exist yet."""
    tables = dict.fromkeys(t for s in steps for t in locked_tables(s))
    return {table: db.query(cursor, ROW_COUNT, table)[0][0] for table in tables}


def step_sql(result: BuildResult, step: Step) -> str:
    """What a step runs: its file's text; for a message file, the registration that
    never overwrites another application's message (relq.compiler.messages), as
    dist/deploy.sql runs it."""
    if step.kind == "messages":
        return register_sql(message_files(result.facts)[step.path])
    return result.sources[step.path].text


def run_step(conn, step: Step, text: str, statement_lock_wait: int | None = None) -> None:
    """One file, with its journal row (and those of the tables a migration
    brings up to date), in one transaction. Messages are the exception:
    sp_addmessage writes to master, so each runs on its own and is idempotent.
    ``statement_lock_wait``: set again before the file (SET LOCK_TIMEOUT lasts for the
    session, and a file may have set its own).

    After a failure the connection stays in manual-commit mode: turning autocommit
    back on would commit whatever the file left open (ODBC commits a pending
    transaction when autocommit is switched on), and the caller closes the
    connection, which discards uncommitted work. The exception is a lock wait that
    ran out (LockWaitExceeded) once the server holds nothing of the file: then
    autocommit is back on, and the file may run again on this session."""
    transactional = step.kind != "messages"
    if statement_lock_wait is not None:
        _bound_lock_waits(conn.cursor(), statement_lock_wait)
    conn.autocommit = not transactional
    cursor = conn.cursor()
    batch = None
    try:
        if step.constraints:
            db.run_batch(cursor, drop_checks_sql(step.constraints))
        for batch in split_batches(text):
            for _ in range(batch.count):
                db.run_batch(cursor, batch.sql)
        batch = None
        if step.constraints:
            db.run_batch(cursor, add_checks_sql(step.constraints))
        journal.record(cursor, step.path, step.kind, step.checksum)
        for path, kind, checksum in step.records:
            journal.record(cursor, path, kind, checksum)
        if transactional:
            conn.commit()
    except RelqError as exc:
        where = f"{step.path}:{batch.line}" if batch is not None else step.path
        _discard(cursor)
        undone, ended = _undo(conn, transactional)
        if isinstance(exc, db.SqlError) and any(m.number == LOCK_TIMEOUT for m in exc.messages):
            raise LockWaitExceeded(where, undone, ended and _autocommit(conn)) from None
        raise DeployFailed(f"{where}: {exc}\n  {undone}; every file before it is "
                           f"deployed and journaled, so the next deploy resumes here") from None
    conn.autocommit = True


def _bound_lock_waits(cursor, seconds: int) -> None:
    db.run_batch(cursor, f"SET LOCK_TIMEOUT {int(seconds) * 1000};")


def _discard(cursor) -> None:
    """Drop what the failed batch has not returned yet: a statement that timed out cancels
    that statement only, and the batch's later statements would run on (closing the cursor
    discards its pending results, so the driver cancels the rest of the batch)."""
    with suppress(Exception):  # the connection itself failed: _undo says so
        cursor.close()


def _autocommit(conn) -> bool:
    """Turn autocommit back on once nothing of the file is open on the server; False when
    the connection refuses, which ends the deploy as a failed connection would."""
    try:
        conn.autocommit = True
    except Exception:
        return False
    return True


def _undo(conn, transactional: bool) -> tuple[str, bool]:
    """End the failed file's transaction, and say what became of it. The server is
    asked rather than the rollback's outcome read: an error under XACT_ABORT, or one
    that aborts the batch, has rolled the transaction back there already, and a
    rollback then fails although nothing was applied. ``SELECT @@TRANCOUNT`` reads
    no table, so it opens no implicit transaction of its own
    (https://learn.microsoft.com/sql/t-sql/statements/set-implicit-transactions-transact-sql).
    Returns the text and whether the server is known to hold nothing of the file's transaction."""
    if not transactional:
        return "this file may be partly applied (it runs without a transaction; it is safe to rerun)", True
    try:
        if not db.query(conn.cursor(), "SELECT @@TRANCOUNT;")[0][0]:
            return "nothing of this file was applied (the server had rolled it back)", True
        conn.rollback()
    except Exception:  # the connection itself failed: closing it discards the file's transaction
        return ("nothing of this file was committed (the connection failed; closing it rolls the file "
                "back)", False)
    return "nothing of this file was applied (rolled back)", True


# The login with SID 0x01 is the one SQL Server creates at setup, sa, whatever it was renamed
# to and even when it is disabled: an owner no person logs in as, which no departure of a DBA
# orphans. ALTER AUTHORIZATION ON DATABASE takes a SQL login or a Windows user login (not a
# group, not a role) that has no user in the database yet, and IMPERSONATE on it, or sysadmin
# (https://learn.microsoft.com/sql/t-sql/statements/alter-authorization-transact-sql).
_CALLER_SQL = """SET NOCOUNT ON;
SELECT SUSER_SNAME(0x01), IS_SRVROLEMEMBER(N'sysadmin'), DB_ID(?);"""
_OWNER_SQL = """SET NOCOUNT ON;
SELECT
    p.[type],
    CASE WHEN p.[sid] = SUSER_SID() THEN 1 ELSE 0 END,
    CASE
        WHEN EXISTS (
            -- a user that model holds, and every new database copies: dbo (1) is remapped instead
            SELECT 1 FROM model.sys.database_principals AS u WHERE u.[sid] = p.[sid] AND u.principal_id > 4
        ) THEN 1 ELSE 0
    END
FROM sys.server_principals AS p
WHERE p.[name] = ?;"""
_OWNER_TYPES = ("S", "U", "E")  # SQL login, Windows user login, Microsoft Entra user


def ensure_database(conn_str: str, name: str, owner: str | None = None) -> None:
    """Create database ``name`` unless it exists (another deploy may create it at the
    same moment), owned by the login ``owner``. By default a sysadmin gives it to the login
    of SID 0x01 (sa); any other login keeps it, as it enters the database only as its owner.
    The preflight has checked the name; the owner is checked before anything is created, and
    a database whose owner SQL Server refuses is dropped again, empty as it is."""
    conn = db.connect(db.with_database(conn_str, "master"))
    try:
        cursor = conn.cursor()
        first_login, sysadmin, exists = db.query(cursor, _CALLER_SQL, name)[0]
        if exists is not None:
            return
        if owner is None and sysadmin == 1:
            owner = first_login
        give_to = _new_owner(cursor, owner, sysadmin == 1) if owner else None
        try:
            db.run_batch(cursor, f"CREATE DATABASE {quote(name)};")
        except db.SqlError as exc:
            if exc.number != 1801:  # 1801: it exists already, created by someone else
                raise
            return
        if give_to:
            try:
                db.run_batch(cursor, f"ALTER AUTHORIZATION ON DATABASE::{quote(name)} TO {give_to};")
            except db.SqlError as exc:
                db.run_batch(cursor, f"DROP DATABASE {quote(name)};")
                raise RelqError(f"--db-owner {owner!r}: SQL Server refused it ({exc}); the new database "
                                f"was dropped again") from None
    finally:
        conn.close()


def _new_owner(cursor, owner: str, sysadmin: bool) -> str | None:
    """``owner`` quoted for ALTER AUTHORIZATION, None when it is the deploying login itself;
    a RelqError for an owner SQL Server would refuse, or one the login may not give to."""
    found = db.query(cursor, _OWNER_SQL, owner)
    if not found or found[0][0] not in _OWNER_TYPES:
        raise RelqError(f"--db-owner {owner!r}: no SQL login or Windows user login of that name on this "
                        f"server (a group or a role cannot own a database)")
    _, itself, in_model = found[0]
    if itself == 1:
        return None
    if not sysadmin:
        raise RelqError(f"--create-db: a login that is not sysadmin would lose the database it creates to "
                        f"{owner}: leave out --db-owner, or deploy as a sysadmin")
    if in_model == 1:
        raise RelqError(f"--db-owner {owner!r}: it has a user in model, which every new database copies, "
                        f"and an owner may not have one")
    return "[" + owner.replace("]", "]]") + "]"  # one name: its dots and backslashes are its own


def _lock(cursor, timeout_s: int) -> None:
    """Take the deploy lock for this session; a second deploy waits its turn, ``timeout_s``
    at most (sp_getapplock's own @LockTimeout, whatever the session's SET LOCK_TIMEOUT)."""
    code = db.query(
        cursor,
        "SET NOCOUNT ON; DECLARE @rc INT; EXEC @rc = sys.sp_getapplock @Resource = ?, "
        "@LockMode = 'Exclusive', @LockOwner = 'Session', @LockTimeout = ?; SELECT @rc;",
        LOCK_RESOURCE, timeout_s * 1000)[0][0]
    if code < 0:
        why = {-1: f"another deploy has held it for more than {timeout_s} s",
               -2: "the request was cancelled", -3: "it was chosen as a deadlock victim"}
        raise RelqError(f"could not take the deploy lock ({why.get(code, f'code {code}')}); "
                        f"try again when the other deploy has finished, or wait longer with --deploy-wait")
