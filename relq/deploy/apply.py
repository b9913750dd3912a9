"""Applying a plan: file by file, each in its own transaction with its journal
row, under an application lock so that two deploys at once take turns."""

from __future__ import annotations

import re
from collections import Counter
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
from relq.deploy.plan import Plan, Step, format_plan, make_plan
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


class DeployFailed(RelqError):
    """A batch failed: the file is rolled back, the journal holds every file before it."""


@dataclass
class Outcome:
    plan: Plan
    counts: Counter[str]
    database: str


def deploy(root: Path, target: db.Target, *, create_db: str | None = None, dry_run: bool = False,
           lock_timeout: int = 600, console: Console | None = None) -> Outcome:
    """Build the project, check the server (the preflight), then bring the target
    database up to the project. Nothing changes when the preflight finds a problem."""
    console = console or stderr_console()
    verdict, facts = _preflight(root, target, create_db, console)
    if not verdict.ok and not dry_run:
        raise _refused(verdict)
    result = _build(root, console)
    conn_str = target.conn_str
    if create_db:
        if dry_run and not facts.exists:
            plan = make_plan(result, {}, verdict.to_register)
            return _show(console, plan, create_db, verdict, created=False)
        if not dry_run:  # a dry run creates nothing, even a database gone since the preflight
            ensure_database(conn_str, create_db)
        conn_str = db.with_database(conn_str, create_db)
    conn = db.connect(conn_str)
    try:
        cursor = conn.cursor()
        if dry_run:
            plan = make_plan(result, journal.read(cursor), verdict.to_register)
            return _show(console, plan, facts.database, verdict, created=True,
                         rows=row_counts(cursor, plan.changes))
        _lock(cursor, lock_timeout)
        journal.ensure(cursor)
        to_register = preflight.still_to_register(cursor, preflight.project_messages(result.facts),
                                                  verdict.to_register)
        plan = make_plan(result, journal.read(cursor), to_register)
        apply(conn, plan, result, console)
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
          created: bool, rows: dict[str, int | None] | None = None) -> Outcome:
    """Print the plan. ``rows``: the row counts of the tables whose CHECK constraints a
    step re-validates (none in a database that does not exist yet)."""
    exists = "" if created else ", which does not exist yet"
    console.print(f"deploy plan for database {database}{exists} (dry run: nothing changes):")
    for text in format_plan(plan, rows or {}):
        console.print("  " + text, markup=False)
    if not verdict.ok:
        raise _refused(verdict)
    return Outcome(plan, plan.counts(), database)


def apply(conn, plan: Plan, result: BuildResult, console: Console) -> None:
    """Run the steps that change something, with a progress bar on a terminal and
    a line per object either way."""
    work = [s for s in plan.steps if s.runs]
    with Progress(console=console, transient=True, disable=not console.is_terminal) as progress:
        task = progress.add_task("deploying", total=len(work))
        for step in work:
            progress.update(task, description=step.path.rsplit("/", 1)[-1])
            rows = row_counts(conn.cursor(), [step])
            if any(count is not None for count in rows.values()):  # a scan to wait for: say why
                for text in format_plan(Plan([step]), rows):
                    progress.console.print(text, markup=False)
            run_step(conn, step, step_sql(result, step))
            progress.console.print(f"{step.action:<7} {', '.join(step.objects) or step.path}",
                                   markup=False)
            progress.advance(task)
    if plan.removed:
        for text in format_plan(Plan([], plan.removed)):
            console.print(text, markup=False)


def row_counts(cursor, steps: list[Step]) -> dict[str, int | None]:
    """Table -> its approximate row count, for each table whose CHECK constraints one of
    ``steps`` drops and re-adds WITH CHECK; None for a table that does not exist yet."""
    tables = dict.fromkeys(c.table for s in steps if s.runs for c in s.constraints)
    return {table: db.query(cursor, ROW_COUNT, table)[0][0] for table in tables}


def step_sql(result: BuildResult, step: Step) -> str:
    """What a step runs: its file's text; for a message file, the registration that
    never overwrites another application's message (relq.compiler.messages), as
    dist/deploy.sql runs it."""
    if step.kind == "messages":
        return register_sql(message_files(result.facts)[step.path])
    return result.sources[step.path].text


def run_step(conn, step: Step, text: str) -> None:
    """One file, with its journal row (and those of the tables a migration
    brings up to date), in one transaction. Messages are the exception:
    sp_addmessage writes to master, so each runs on its own and is idempotent.

    After a failure the connection stays in manual-commit mode: turning autocommit
    back on would commit whatever the file left open (ODBC commits a pending
    transaction when autocommit is switched on), and the caller closes the
    connection, which discards uncommitted work."""
    transactional = step.kind != "messages"
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
        raise DeployFailed(f"{where}: {exc}\n  {_undo(conn, transactional)}; every file before it is "
                           f"deployed and journaled, so the next deploy resumes here") from None
    conn.autocommit = True


def _undo(conn, transactional: bool) -> str:
    """End the failed file's transaction, and say what became of it. The server is
    asked rather than the rollback's outcome read: an error under XACT_ABORT, or one
    that aborts the batch, has rolled the transaction back there already, and a
    rollback then fails although nothing was applied. ``SELECT @@TRANCOUNT`` reads
    no table, so it opens no implicit transaction of its own
    (https://learn.microsoft.com/sql/t-sql/statements/set-implicit-transactions-transact-sql)."""
    if not transactional:
        return "this file may be partly applied (it runs without a transaction; it is safe to rerun)"
    try:
        if not db.query(conn.cursor(), "SELECT @@TRANCOUNT;")[0][0]:
            return "nothing of this file was applied (the server had rolled it back)"
        conn.rollback()
    except Exception:  # the connection itself failed: closing it discards the file's transaction
        return "nothing of this file was committed (the connection failed; closing it rolls the file back)"
    return "nothing of this file was applied (rolled back)"


def ensure_database(conn_str: str, name: str) -> None:
    """Create database ``name`` unless it exists (another deploy may create it at the
    same moment). The preflight has checked the name."""
    conn = db.connect(db.with_database(conn_str, "master"))
    try:
        cursor = conn.cursor()
        if db.query(cursor, "SELECT DB_ID(?);", name)[0][0] is not None:
            return
        try:
            db.run_batch(cursor, f"CREATE DATABASE {quote(name)};")
        except db.SqlError as exc:
            if exc.number != 1801:  # 1801: it exists already, created by someone else
                raise
    finally:
        conn.close()


def _lock(cursor, timeout_s: int) -> None:
    """Take the deploy lock for this session; a second deploy waits its turn."""
    code = db.query(
        cursor,
        "SET NOCOUNT ON; DECLARE @rc INT; EXEC @rc = sys.sp_getapplock @Resource = ?, "
        "@LockMode = 'Exclusive', @LockOwner = 'Session', @LockTimeout = ?; SELECT @rc;",
        LOCK_RESOURCE, timeout_s * 1000)[0][0]
    if code < 0:
        why = {-1: f"another deploy has held it for more than {timeout_s} s",
               -2: "the request was cancelled", -3: "it was chosen as a deadlock victim"}
        raise RelqError(f"could not take the deploy lock ({why.get(code, f'code {code}')}); "
                        f"try again when the other deploy has finished")
