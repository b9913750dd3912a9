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
from relq.build import BuildResult, build
from relq.build.emit import add_checks_sql, drop_checks_sql
from relq.build.names import quote
from relq.deploy import journal
from relq.deploy.batches import split_batches
from relq.deploy.plan import Plan, Step, format_plan, make_plan
from relq.errors import RelqError
from relq.progress import per_file

LOCK_RESOURCE = "relq.deploy"
SYSTEM_DATABASES = frozenset({"master", "model", "msdb", "tempdb"})
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
    """Build the project, then bring the target database up to it."""
    console = console or Console(stderr=True, highlight=False, soft_wrap=True)
    with per_file(console, "parsing") as on_parsed:
        result = build(root, write=False, on_parsed=on_parsed)
    if not result.ok:
        raise RelqError(f"the build has {len(result.diagnostics)} problem(s): run `invoke build` "
                        f"and fix them before deploying")
    console.print(f"target: {target}", markup=False)
    conn_str = target.conn_str
    if create_db:
        if not ensure_database(conn_str, create_db, create=not dry_run):
            return _show(console, make_plan(result, {}), create_db, created=False)  # dry run
        conn_str = db.with_database(conn_str, create_db)
    conn = db.connect(conn_str)
    try:
        cursor = conn.cursor()
        database = _current_database(cursor)
        if dry_run:
            return _show(console, make_plan(result, journal.read(cursor)), database, created=True)
        _lock(cursor, lock_timeout)
        journal.ensure(cursor)
        plan = make_plan(result, journal.read(cursor))
        apply(conn, plan, result, console)
        return Outcome(plan, plan.counts(), database)
    finally:
        conn.close()  # ends the session, and with it the application lock


def _show(console: Console, plan: Plan, database: str, *, created: bool) -> Outcome:
    exists = "" if created else ", which does not exist yet"
    console.print(f"deploy plan for database {database}{exists} (dry run: nothing changes):")
    for text in format_plan(plan):
        console.print("  " + text, markup=False)
    return Outcome(plan, plan.counts(), database)


def apply(conn, plan: Plan, result: BuildResult, console: Console) -> None:
    """Run the steps that change something, with a progress bar on a terminal and
    a line per object either way."""
    work = [s for s in plan.steps if s.runs]
    with Progress(console=console, transient=True, disable=not console.is_terminal) as progress:
        task = progress.add_task("deploying", total=len(work))
        for step in work:
            progress.update(task, description=step.path.rsplit("/", 1)[-1])
            run_step(conn, step, result.sources[step.path].text)
            progress.console.print(f"{step.action:<7} {', '.join(step.objects) or step.path}",
                                   markup=False)
            progress.advance(task)
    if plan.removed:
        for text in format_plan(Plan([], plan.removed)):
            console.print(text, markup=False)


def run_step(conn, step: Step, text: str) -> None:
    """One file, with its journal row (and those of the tables a migration
    brings up to date), in one transaction. Messages are the exception:
    sp_addmessage writes to master, so each runs on its own and is idempotent."""
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
        applied = "nothing of this file was applied" if transactional and _rolled_back(conn) else (
            "this file may be partly applied (it runs without a transaction; it is safe to rerun)")
        where = f"{step.path}:{batch.line}" if batch is not None else step.path
        raise DeployFailed(f"{where}: {exc}\n  {applied}; every file before it is deployed and "
                           f"journaled, so the next deploy resumes here") from None
    finally:
        conn.autocommit = True


def _rolled_back(conn) -> bool:
    """Roll back the file's transaction; False when the connection itself is gone."""
    try:
        conn.rollback()
        return True
    except Exception:  # the server or the network failed: nothing more can be said
        return False


def ensure_database(conn_str: str, name: str, *, create: bool = True) -> bool:
    """Whether database ``name`` exists, creating it first when ``create`` (another
    deploy may create it at the same moment)."""
    if not _DATABASE_NAME.match(name):
        raise RelqError(f"--create-db {name!r}: use letters, digits and underscores only")
    conn = db.connect(db.with_database(conn_str, "master"))
    try:
        cursor = conn.cursor()
        if db.query(cursor, "SELECT DB_ID(?);", name)[0][0] is not None:
            return True
        if not create:
            return False
        try:
            db.run_batch(cursor, f"CREATE DATABASE {quote(name)};")
        except db.SqlError as exc:
            if exc.number != 1801:  # 1801: it exists already, created by someone else
                raise
        return True
    finally:
        conn.close()


def _current_database(cursor) -> str:
    name = db.query(cursor, "SELECT DB_NAME();")[0][0]
    if name.casefold() in SYSTEM_DATABASES:
        raise RelqError(f"the connection lands in the system database {name}: name the target "
                        f"with DATABASE=... in the connection string, or pass --create-db NAME")
    return name


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
