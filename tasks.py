"""relq's commands. Each task parses its arguments and calls the relq package."""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

from invoke import Collection, Exit

from relq.commands import command, number

ROOT = Path(__file__).resolve().parent
SQL_FOLDERS = "database tests_tsqlt"
PYTHON = "relq tests bench tasks.py"
REPORTS = ROOT / "reports"
CONN_HELP = "ODBC connection string (default: RELQ_MSSQL, then relq.mssql in invoke.yaml)"
REMOTE_HELP = "a Spark Connect server to run on instead, sc://host:15002 (default: SPARK_REMOTE)"


def _tool(name: str) -> str:
    """A console script of this environment (the one running invoke)."""
    return str(Path(sys.executable).parent / name)


def _required(task_name: str, option: str, value: str | None, what: str) -> None:
    """A required option left out: one line naming it, exit code 2."""
    if not value:
        raise Exit(f"{task_name}: --{option} is required: {what} (invoke {task_name} --help)", code=2)


def _fail(exc: Exception, command: str) -> Exit:
    """A user's problem ends in one line, never a traceback."""
    return Exit(f"{command}: {exc}", code=1)


@command("build")
def build(c):
    """Check database/ and tests_tsqlt/ offline; write dist/deploy.sql and dist/manifest.json."""
    from relq.compiler import build as run_build
    from relq.compiler.report import show, stderr_console
    from relq.errors import RelqError
    from relq.progress import per_file

    out = stderr_console()
    try:
        with per_file(out, "parsing") as on_parsed:
            result = run_build(ROOT, on_parsed=on_parsed)
    except RelqError as exc:
        raise _fail(exc, "build") from None
    show(result, out)
    if not result.ok:
        raise Exit(code=1)


@command("lint")
def lint(c):
    """Check the house style: .sql files with sqlfluff and .sqlfluff, Python with ruff."""
    from relq.compiler.report import stderr_console
    from relq.errors import RelqError
    from relq.lint import lint as run_lint
    from relq.lint import show
    from relq.progress import per_file

    out = stderr_console()
    try:
        with per_file(out, "linting") as on_file:
            result = run_lint(ROOT, SQL_FOLDERS.split(), on_file)
    except RelqError as exc:
        raise _fail(exc, "lint") from None
    show(result, out)
    if not Path(_tool("ruff")).exists():
        raise Exit("lint: ruff is missing from this environment: pip install -e '.[dev]'", code=1)
    ruff = c.run(f"{_tool('ruff')} check {PYTHON}", pty=False, warn=True)
    if not result.ok or ruff.failed:
        raise Exit(code=1)


@command("fix")
def fix(c):
    """Rewrite .sql files to the house style with sqlfluff's fixes (and Python with ruff's)."""
    c.run(f"{_tool('sqlfluff')} fix {SQL_FOLDERS}", pty=False)
    c.run(f"{_tool('ruff')} check --fix {PYTHON}", pty=False)


@command("deploy", numbers=("deploy_wait", "statement_lock_wait"), help={
    "conn": CONN_HELP,
    "create-db": "create this database if it is missing, and deploy into it",
    "db-owner": "the login that owns a database --create-db creates (default for a sysadmin: sa, the login "
                "of SID 0x01; a login that is not sysadmin keeps the database it creates)",
    "dry-run": "print the preflight and the plan (with the tables each step locks), and change nothing",
    "check": "only the preflight: version, compatibility level, rights, message numbers, RCSI",
    "deploy-wait": "seconds to wait for another deploy of the same database to finish (default 600)",
    "statement-lock-wait": "seconds each statement may wait for a lock the application holds (a claim, "
                           "a drain, a producer's transaction) before its file is rolled back and tried "
                           "again, 3 times at most (default 5)",
})
def deploy(c, conn=None, create_db=None, dry_run=False, check=False, deploy_wait=None,
           statement_lock_wait=None, db_owner=None):
    """Deploy the project to SQL Server: preflight first, idempotent, journaled, one at a time."""
    from relq.db import resolve_target
    from relq.deploy.apply import check as run_check
    from relq.deploy.apply import deploy as run_deploy
    from relq.errors import RelqError

    waits = {}
    for option, value, default in (("deploy-wait", deploy_wait, 600), ("statement-lock-wait",
                                                                       statement_lock_wait, 5)):
        value = number("deploy", option, value)
        if value is not None and value < 0:
            raise Exit(f"deploy: --{option} must be 0 or more seconds, not {value}", code=2)
        waits[option.replace("-", "_")] = default if value is None else value
    try:
        target = resolve_target(conn, c.config)
        if check:
            run_check(ROOT, target, create_db=create_db)
            print("preflight passed: nothing stands in the way of a deploy", file=sys.stderr)
            return
        outcome = run_deploy(ROOT, target, create_db=create_db, dry_run=dry_run, db_owner=db_owner, **waits)
    except RelqError as exc:
        raise _fail(exc, "deploy") from None
    counts = outcome.counts
    print(f"deploy {'plan' if dry_run else 'done'} for {outcome.database}: "
          f"{counts['create']} created, {counts['alter']} altered, {counts['apply']} applied "
          f"(data, messages, security), {counts['migration']} migrations applied, "
          f"{counts['unchanged'] + counts['migrated']} unchanged", file=sys.stderr)


@command("register-messages", help={"conn": CONN_HELP})
def register_messages(c, conn=None):
    """Register relq's messages in a server's master, no database touched: per replica, after a restore."""
    from relq.db import resolve_target
    from relq.deploy.register import register_messages as run_register
    from relq.errors import RelqError

    try:
        done = run_register(ROOT, resolve_target(conn, c.config))
    except RelqError as exc:
        raise _fail(exc, "register-messages") from None
    print(done.summary(), file=sys.stderr)


@command("tsqlt.install", name="install", help={
    "conn": CONN_HELP,
    "zip": "a tSQLt release zip on disk",
    "url": "where to download the release zip (default: the URL pinned in pyproject.toml)",
    "sha256": "the SHA-256 of a release other than the one pyproject.toml pins",
})
def tsqlt_install(c, conn=None, zip=None, url=None, sha256=None):
    """Install tSQLt from its official release zip, after checking its SHA-256."""
    from relq.db import resolve_target
    from relq.deploy import tsqlt
    from relq.errors import RelqError
    from relq.live import tsqlt_release

    try:
        target = resolve_target(conn, c.config)
        print(f"tsqlt.install: {target}", file=sys.stderr)
        tsqlt.install(target.conn_str, tsqlt_release(ROOT, zip, url, sha256))
    except RelqError as exc:
        raise _fail(exc, "tsqlt.install") from None
    print("tSQLt installed", file=sys.stderr)


@command("render-queues")
def render_queues(c):
    """Write every queue's templated objects (relq/scaffold/templates) into database/ and tests_tsqlt/."""
    from relq.errors import RelqError
    from relq.scaffold import write

    try:
        changed = write(ROOT)
    except RelqError as exc:
        raise _fail(exc, "render-queues") from None
    print("\n".join(changed) if changed else "every queue is what its templates make", file=sys.stderr)


@command("new-queue", iterable=["subtype"], help={
    "name": "the queue's name, PascalCase, 2 to 14 letters and digits: InvoiceExport",
    "types": "its job types, comma-separated, one or more: InvoicePdf or InvoicePdf,InvoiceXml",
    "noun": "what the comments call one item (default: '<name in words> job')",
    "subtype": "TEXT, repeatable: a type's own columns, in a subtype table: "
               "'InvoicePdf: Template NVARCHAR(100), Copies INT NULL'",
})
def new_queue(c, name=None, types="", noun=None, subtype=None):
    """Scaffold a relational queue of the job shape from the templates; `invoke build` passes right after."""
    from relq.errors import RelqError
    from relq.scaffold import new_queue as scaffold
    from relq.scaffold import parse_subtype

    _required("new-queue", "name", name, "the queue's name, e.g. --name InvoiceExport")
    try:
        subtypes = tuple(parse_subtype(s) for s in subtype or ())
        made = scaffold(ROOT, name, [t.strip() for t in (types or "").split(",") if t.strip()], noun,
                        subtypes=subtypes)
    except RelqError as exc:
        raise _fail(exc, "new-queue") from None
    print(made.summary(), file=sys.stderr)


@command("status", numbers=("watch",), help={
    "conn": CONN_HELP,
    "watch": "refresh every this many seconds until Ctrl-C (default: show once)",
    "json": "print JSON for scripts instead of the table",
})
def status(c, conn=None, watch=None, json=False):
    """The health of every queue: items per state, the oldest due, past their lease, throughput;
    then one line on the newest batches."""
    from rich.console import Console

    from relq import batches
    from relq import status as health

    watch = number("status", "watch", watch)

    def show(connection) -> None:
        if json:
            print(health.as_json(health.read(connection)))
        elif watch is not None and watch > 0:
            health.watch(connection, watch, Console())
        else:
            Console().print(health.view(health.read(connection)))
            Console().print(batches.status_line_of(connection))

    _on_server("status", conn, c.config, show)


CONTROL_TARGET = "the queue, or queue.Type for one job type (e.g. SyncQueue or SyncQueue.CustomerSync)"


def _on_server(task_name: str, conn: str | None, config, act):
    """Connect (the target printed masked), return ``act(connection)``; a user's problem (no
    server, an unknown queue or schedule, a refused value) ends in one line."""
    from relq import db
    from relq.errors import RelqError

    try:
        target = db.resolve_target(conn, config)
        print(f"{task_name}: {target}", file=sys.stderr)  # masked; stderr keeps --json's output clean
        connection = db.connect(target.conn_str)
        try:
            return act(connection)
        finally:
            connection.close()
    except RelqError as exc:
        raise _fail(exc, task_name) from None


@command("pause", help={
    "target": CONTROL_TARGET,
    "reason": "why, 1 to 400 characters: shown with the pause in status, the dashboard and /metrics' labels",
    "by": "who pauses it (default: the login)",
    "conn": CONN_HELP,
})
def pause(c, target=None, reason=None, by=None, conn=None):
    """Pause a queue or a job type: claims take nothing of it until resumed; running items finish."""
    from relq import controls
    from relq.errors import RelqError

    _required("pause", "target", target, CONTROL_TARGET)
    try:
        queue, type_ = controls.split_target(target)
        why = controls.check_reason(reason)
    except RelqError as exc:
        raise Exit(f"pause: {exc}", code=2) from None
    row = _on_server("pause", conn, c.config, lambda cn: controls.pause(cn, queue, type_, why, by))
    print(controls.done_line("pause", target, row))


@command("resume", help={"target": CONTROL_TARGET, "by": "who resumes it (default: the login)",
                         "conn": CONN_HELP})
def resume(c, target=None, by=None, conn=None):
    """Resume a paused queue or job type: the next claim takes its items again."""
    from relq import controls
    from relq.errors import RelqError

    _required("resume", "target", target, CONTROL_TARGET)
    try:
        queue, type_ = controls.split_target(target)
    except RelqError as exc:
        raise Exit(f"resume: {exc}", code=2) from None
    row = _on_server("resume", conn, c.config, lambda cn: controls.resume(cn, queue, type_, by))
    print(controls.done_line("resume", target, row))


@command("limit", numbers=("to",), help={
    "target": "queue.Type: at most --to of the type in Processing at once; a queue alone: at most --to "
              "items of one group (GroupKey) at once, in enqueue order",
    "to": "the limit, 1 to 32767",
    "none": "remove the limit (a type: none; a queue's groups: 1, one at a time)",
    "by": "who sets it (default: the login)",
    "conn": CONN_HELP,
})
def limit(c, target=None, to=None, none=False, by=None, conn=None):
    """Limit how many items of a job type, or of one group, are in Processing at once."""
    from relq import controls
    from relq.errors import RelqError

    _required("limit", "target", target, "queue.Type, or a queue for its groups' limit")
    to = number("limit", "to", to)
    if (to is None) == (not none):
        raise Exit("limit: give either --to N (1 to 32767) or --none", code=2)
    try:
        queue, type_ = controls.split_target(target)
        value = controls.check_limit(to)
    except RelqError as exc:
        raise Exit(f"limit: {exc}", code=2) from None
    row = _on_server("limit", conn, c.config, lambda cn: controls.limit(cn, queue, type_, value, by))
    print(controls.done_line("limit", target, row))


@command("dashboard", numbers=("port", "refresh"), iterable=["trusted_proxy"], help={
    "host": "the address to listen on (default 127.0.0.1; anything else is reachable by others: a warning)",
    "port": "the port (default 8350)",
    "allow-actions": "offer Retry, Cancel, Pause, Resume and Reschedule (the login needs QueueAdmin)",
    "show-personal-data": "show notification addresses and user names unmasked",
    "refresh": "seconds between the overview's live refreshes (default 5)",
    "trusted-proxy": "TEXT, repeatable or comma-separated: a proxy's IP address or network whose "
                     "X-Forwarded-For is believed (default none: ignored from everyone)",
    "user-header": "the header a trusted proxy names its authenticated user in, for the audit lines "
                   "(X-Forwarded-User)",
    "conn": CONN_HELP,
})
def dashboard(c, host="127.0.0.1", port=None, allow_actions=False, show_personal_data=False, refresh=None,
              conn=None, trusted_proxy=None, user_header=None):
    """A web page over the queues: health, items, attempts, controls, and /metrics for Prometheus."""
    from relq import db
    from relq.errors import RelqError

    try:
        from relq.dashboard import guard
        from relq.dashboard.app import Settings
        from relq.dashboard.serve import run
    except ImportError as exc:
        raise Exit(f"dashboard: {exc.name} is missing: pip install -e '.[dashboard]'", code=1) from None
    port = 8350 if port is None else number("dashboard", "port", port)
    refresh = 5.0 if refresh is None else number("dashboard", "refresh", refresh)
    if not 0 < port < 65536:
        raise Exit(f"dashboard: --port must be 1-65535, not {port}", code=2)
    if refresh < 1:
        raise Exit("dashboard: --refresh must be at least 1 (seconds)", code=2)
    try:
        proxies = guard.trusted_proxies(trusted_proxy or ())
        header = guard.user_header(user_header, proxies)
    except guard.Refused as exc:
        raise Exit(f"dashboard: {exc}", code=2) from None
    settings = Settings(allow_actions=allow_actions, show_personal_data=show_personal_data, refresh_s=refresh,
                        trusted_proxies=proxies, user_header=header)
    try:
        run(db.resolve_target(conn, c.config), host=host, port=port, settings=settings)
    except RelqError as exc:
        raise _fail(exc, "dashboard") from None


@command("worker", iterable=["handlers"],
         numbers=("concurrency", "batch", "wait_ms", "max_poll_ms", "grace"), help={
    "queue": "the queue to work on: Notification, SyncQueue, ...",
    "concurrency": "slots, each with its own connection (default 1)",
    "batch": "items a slot claims at once (default 1)",
    "wait-ms": "0 (default): idle slots share one poll in the worker; 1-60000: a claim waits in the server",
    "max-poll-ms": "the shared idle poll's longest pause, 100-60000 (default 1000; 100: never longer)",
    "grace": "seconds in-flight items get to finish at shutdown (default 30)",
    "name": "this worker's name; a stable one gets its unfinished items back after a restart",
    "handlers": "TEXT, repeatable: a module with install(handlers) (default: the queue's own)",
    "type": "claim only this job type (SyncQueue); without it a worker claims every type",
    "conn": CONN_HELP,
    "no-scheduler": "do not enqueue the queue's recurring schedules (by default a worker does)",
    "schedule-once": "enqueue the queue's due schedule slots once and exit (a SQL Server Agent job step)",
})
def worker(c, queue=None, concurrency=None, batch=None, wait_ms=None, grace=None, name=None, handlers=None,
           type=None, conn=None, max_poll_ms=None, no_scheduler=False, schedule_once=False):
    """Run a worker on a queue until Ctrl-C or SIGTERM: one log line per item, a summary at the end."""
    from relq.worker.cli import main

    _required("worker", "queue", queue, "the queue to work on, e.g. --queue Notification")
    argv = ["--queue", queue]
    for option, value, kind in (("concurrency", concurrency, int), ("batch", batch, int),
                                ("wait-ms", wait_ms, int), ("max-poll-ms", max_poll_ms, int),
                                ("grace", grace, int)):
        given = number("worker", option, value, kind)
        argv += [f"--{option}", str(given)] if given is not None else []
    argv += ["--name", name] if name else []
    argv += ["--type", type] if type else []
    for module in handlers or []:
        argv += ["--handlers", module]
    argv += ["--no-scheduler"] if no_scheduler else []
    argv += ["--schedule-once"] if schedule_once else []
    code = main(argv, conn=conn, config=c.config)
    if code:
        raise Exit(code=code)


@command("schedule.add", name="add", numbers=("every", "priority", "catch_up"), help={
    "name": "the schedule's name, its key (1-128 characters)",
    "queue": "the job queue to enqueue into, e.g. SyncQueue",
    "type": "the job type of every job it enqueues",
    "cron": "a cron expression in UTC: 5 fields (minute hour day-of-month month day-of-week), "
            "or 6 with a second first",
    "every": "or an interval in seconds (1-31622400); the first slot is now",
    "payload": "the jobs' JSON payload",
    "entity-key": "the jobs' EntityKey (default: the schedule's name)",
    "priority": "the jobs' priority, higher first (default 0)",
    "group-key": "the jobs' ordered group (default: none)",
    "catch-up": "after a time without schedulers enqueue the latest N missed slots (1-1000); "
                "default: only the latest one (skip)",
    "conn": CONN_HELP,
})
def schedule_add(c, name=None, queue=None, type=None, cron=None, every=None, payload=None, entity_key=None,
                 priority=None, group_key=None, catch_up=None, conn=None):
    """Add a recurring schedule: a job enqueued at every slot of a cron expression or an interval (UTC)."""
    from relq import schedules as admin
    from relq.errors import RelqError

    try:
        schedule = admin.new_schedule(
            name, queue, type, cron=cron, every=number("schedule.add", "every", every), payload=payload,
            entity_key=entity_key, priority=number("schedule.add", "priority", priority), group_key=group_key,
            catch_up=number("schedule.add", "catch-up", catch_up))
    except RelqError as exc:
        raise Exit(f"schedule.add: {exc}", code=2) from None
    row = _on_server("schedule.add", conn, c.config, lambda cn: admin.add(cn, schedule))
    print(admin.summary("added", row))


@command("schedule.list", name="list", help={"conn": CONN_HELP, "json": "print JSON for scripts"})
def schedule_list(c, conn=None, json=False):
    """List the recurring schedules: cadence, misfire policy, next and last slot, paused or not."""
    from rich.console import Console

    from relq import schedules as admin

    rows = _on_server("schedule.list", conn, c.config, admin.read)
    if json:
        print(admin.as_json(rows))
    else:
        Console().print(admin.table(rows))


@command("schedule.pause", name="pause", help={"name": "the schedule", "conn": CONN_HELP})
def schedule_pause(c, name=None, conn=None):
    """Pause a schedule: no slot of it is enqueued until it is resumed."""
    from relq import schedules as admin

    _required("schedule.pause", "name", name, "the schedule to pause")
    row = _on_server("schedule.pause", conn, c.config, lambda cn: admin.pause(cn, name))
    print(admin.summary("paused", row))


@command("schedule.resume", name="resume", help={"name": "the schedule", "conn": CONN_HELP})
def schedule_resume(c, name=None, conn=None):
    """Resume a paused schedule from its first slot from now on (the paused time's slots are not enqueued)."""
    from relq import schedules as admin

    _required("schedule.resume", "name", name, "the schedule to resume")
    row = _on_server("schedule.resume", conn, c.config, lambda cn: admin.resume(cn, name))
    print(admin.summary("resumed", row))


@command("schedule.remove", name="remove", help={"name": "the schedule", "conn": CONN_HELP})
def schedule_remove(c, name=None, conn=None):
    """Remove a schedule for good; the jobs it enqueued stay."""
    from relq import schedules as admin

    _required("schedule.remove", "name", name, "the schedule to remove")
    _on_server("schedule.remove", conn, c.config, lambda cn: admin.remove(cn, name))
    print(f"schedule {name} removed")


@command("test", help={"pytest": "more arguments for pytest, e.g. --pytest='-k deploy -x'"})
def test(c, pytest=""):
    """Run the tests, phase by phase: lint, build, pytest; with RELQ_MSSQL set, the live tier too."""
    from relq.db import with_database
    from relq.errors import RelqError
    from relq.live import (
        DOWNLOADED_ZIP,
        SKIPPED,
        TEST_DATABASE,
        TSQLT_ZIP,
        live_target,
        run_tsqlt,
        throwaway_database,
        tsqlt_release,
    )

    more = _more(pytest)  # a mistake in them stops the tests before the first phase
    target = live_target()
    phases = 3 if target is None else 4
    _phase(1, phases, "lint (sqlfluff, ruff)")
    lint(c)
    _phase(2, phases, "build")
    build(c)
    if target is None:
        print(SKIPPED, file=sys.stderr)
        _phase(3, phases, "pytest")
        c.run(f"{sys.executable} -m pytest{more}", pty=False)
        return
    try:
        _phase(3, phases, "live tier: tSQLt in a throwaway database")
        scripts = tsqlt_release(ROOT, download_to=REPORTS)
        with throwaway_database(ROOT, target) as database:
            conn_str = with_database(target.conn_str, database)
            result = run_tsqlt(ROOT, conn_str, scripts, REPORTS / "tsqlt.xml")
            print(f"tSQLt: {result.tests} tests, {result.failures} failed, {result.errors} errors "
                  f"(reports/tsqlt.xml)", file=sys.stderr)
            _phase(4, phases, "pytest, with the live tier")
            # pytest's tSQLt test installs from the zip already fetched and verified
            env = {TSQLT_ZIP: str(REPORTS / DOWNLOADED_ZIP), **os.environ, TEST_DATABASE: database}
            tested = c.run(f"{sys.executable} -m pytest --junitxml={REPORTS / 'pytest.xml'}{more}",
                           pty=False, env=env, warn=True)
    except RelqError as exc:
        raise _fail(exc, "test") from None
    if not result.ok or tested.failed:
        raise Exit("test: the live tier failed", code=1)


def _more(arguments: str) -> str:
    """``invoke test --pytest``'s arguments, each quoted for the shell as the user split them."""
    try:
        return "".join(f" {shlex.quote(a)}" for a in shlex.split(arguments or ""))
    except ValueError as exc:
        raise Exit(f"test: --pytest {arguments!r}: {exc}", code=2) from None


def _phase(step: int, phases: int, name: str) -> None:
    print(f"test: {step}/{phases} {name}", file=sys.stderr, flush=True)


@command("pipeline.enqueue", numbers=("partitions",), help={
    "input": "the items: a Parquet, CSV or JSON file or folder",
    "format": "parquet, csv or json (default parquet)",
    "rejects": "where rejected rows go, with their reason (Parquet)",
    "queue": "the queue (default SyncQueue)",
    "archive": "the archive root: rows whose DedupKey it holds are not enqueued again",
    "types": "the queue's job types, comma-separated (default: read from the database)",
    "master": "Spark master (default local[*])",
    "remote": REMOTE_HELP,
    "partitions": "Spark partitions, each with its own connection (default 8)",
    "conn": CONN_HELP,
})
def pipeline_enqueue(c, input, format="parquet", rejects=None, queue="SyncQueue", archive=None, types=None,
                     master=None, remote=None, partitions=None, conn=None):
    """Validate work items with Spark and enqueue the valid ones; rejects go to --rejects."""
    argv = ["enqueue", "--input", input, "--format", format, "--queue", queue]
    partitions = number("pipeline.enqueue", "partitions", partitions)
    for flag, value in (("--rejects", rejects), ("--archive", archive), ("--types", types),
                        ("--master", master), ("--remote", remote), ("--partitions", partitions)):
        argv += [flag, str(value)] if value is not None else []
    _pipeline(c, argv, conn)


@command("pipeline.archive", numbers=("older_than_minutes", "partitions"), help={
    "older-than-minutes": "archive the items that finished longer ago than this",
    "archive": "the archive root (Parquet, partitioned Queue/Type/Day)",
    "queue": "the queue (default SyncQueue)",
    "master": "Spark master (default local[*])",
    "remote": REMOTE_HELP,
    "partitions": "Spark partitions, each reading one key range (default 8)",
    "conn": CONN_HELP,
})
def pipeline_archive(c, older_than_minutes, archive=None, queue="SyncQueue", master=None, remote=None,
                     partitions=None, conn=None):
    """Move finished items into the Parquet archive, then purge exactly those from the queue."""
    older_than_minutes = number("pipeline.archive", "older-than-minutes", older_than_minutes)
    partitions = number("pipeline.archive", "partitions", partitions)
    argv = ["archive", "--older-than-minutes", str(older_than_minutes), "--queue", queue]
    for flag, value in (("--archive", archive), ("--master", master), ("--remote", remote),
                        ("--partitions", partitions)):
        argv += [flag, str(value)] if value is not None else []
    _pipeline(c, argv, conn)


@command("pipeline.report", help={
    "archive": "the archive's root (default: relq.pipeline.archive in invoke.yaml)",
    "out": "folder for report.html, report.json and the charts (default reports/pipeline)",
    "master": "Spark master (default local[*])",
    "remote": REMOTE_HELP,
    "conn": "ODBC connection string whose health views to add (default: RELQ_MSSQL, then invoke.yaml)",
})
def pipeline_report(c, archive=None, out=None, master=None, remote=None, conn=None):
    """What the queues did, from the archive: throughput, waits, durations, retries, failures."""
    from relq.db import resolve_target
    from relq.errors import RelqError
    from relq.pipeline import report

    try:
        archive, out, master, remote = report.settings(c.config, archive, out, master, remote)
        try:
            conn_str = resolve_target(conn, c.config).conn_str
        except RelqError:
            conn_str = None  # no server configured: the report says so
        paths = report.run(archive, out, master, conn_str, remote=remote)
    except RelqError as exc:
        raise _fail(exc, "pipeline.report") from None
    print(f"pipeline.report: {paths.html} and {paths.json}", file=sys.stderr)
    if paths.health == "failed":
        print(f"pipeline.report: {paths.health_note}", file=sys.stderr)


@command("pipeline.demo", numbers=("rows",), help={
    "rows": "how many synthetic archived items (default 100000)",
    "out": "folder for the report; the archive goes to <out>/archive (default reports/pipeline-demo)",
    "master": "Spark master (default local[*])",
    "remote": REMOTE_HELP,
})
def pipeline_demo(c, rows=None, out=None, master=None, remote=None):
    """The report on a synthetic archive of --rows items: the way to see it without a server."""
    from relq.errors import RelqError
    from relq.pipeline import demo
    from relq.pipeline.spark import target

    rows = number("pipeline.demo", "rows", rows) if rows is not None else demo.DEFAULT_ROWS
    if rows < 1:
        raise Exit(f"pipeline.demo: --rows must be 1 or more, not {rows}", code=2)
    try:
        master, remote = target(master, remote, c.config)
        paths = demo.run(rows, out or demo.DEFAULT_OUT, master, remote=remote)
    except RelqError as exc:
        raise _fail(exc, "pipeline.demo") from None
    print(f"pipeline.demo: {paths.html} and {paths.json}", file=sys.stderr)


def _pipeline(c, argv: list[str], conn: str | None) -> None:
    from relq.pipeline.cli import main

    code = main(argv, conn=conn, config=c.config)
    if code:
        raise Exit(code=code)


@command("bench", numbers=("seconds", "workers", "batch", "backlog", "small_backlog", "large_backlog",
                          "purge_items", "plan_backlog", "warmup", "idle_seconds", "producers"),
         help={
    "scenarios": "comma-separated: plans, backlog, workers, batch, purge, queues, claimcost, healthcost, "
                 "idle, producers, transportpurge (default: all)",
    "seconds": "length of each arm (default 10)",
    "workers": "the many workers and consumers; the few are 1 (default 8)",
    "batch": "items per batch claim (default 100)",
    "backlog": "due items in the workers, batch, purge and queues arms (default 10000)",
    "small-backlog": "the small size of backlog, claimcost and healthcost (default 1000)",
    "large-backlog": "the large size of backlog, claimcost and healthcost (default 1000000)",
    "purge-items": "finished items for the purge to remove (default 500000)",
    "plan-backlog": "items in each queue while the claim plans are captured (default 100000)",
    "warmup": "untimed seconds each worker cycles before an arm (default 1)",
    "idle-seconds": "the idle scenario's measured window (default 60)",
    "producers": "producers in each arm of the producers scenario (default 8)",
    "consumers": "the producers scenario's arms: consumers in each, comma-separated (default 1,8,32)",
    "out": "folder for bench.json and throughput.png (default reports/bench)",
    "test": "run the harness's live pytest (tests/bench, RELQ_BENCH=1) instead of the benchmarks",
    "conn": CONN_HELP,
})
def bench(c, scenarios=None, seconds=None, workers=None, batch=None, backlog=None, small_backlog=None,
          large_backlog=None, purge_items=None, plan_backlog=None, warmup=None, idle_seconds=None,
          producers=None, consumers=None, out="reports/bench", test=False, conn=None):
    """Benchmark the queues against SQL Server: claims, costs as tables grow, idle workers, loads, plans."""
    from relq.db import ENV_VAR, resolve_target
    from relq.errors import RelqError

    argv = ["--out", str(ROOT / out)]
    for option, value in (("seconds", seconds), ("workers", workers), ("batch", batch), ("backlog", backlog),
                          ("small-backlog", small_backlog), ("large-backlog", large_backlog),
                          ("purge-items", purge_items), ("plan-backlog", plan_backlog), ("warmup", warmup),
                          ("idle-seconds", idle_seconds), ("producers", producers)):
        given = number("bench", option, value, int)
        argv += [f"--{option}", str(given)] if given is not None else []
    argv += ["--scenarios", scenarios] if scenarios else []
    argv += ["--consumers", consumers] if consumers else []
    try:
        target = resolve_target(conn, c.config)
    except RelqError as exc:  # without a server the live pytest would skip, and pass: refuse instead
        raise Exit(f"bench: {exc}", code=2) from None
    print(f"bench: {target}", file=sys.stderr)
    # The server reaches the child process in its environment, never in its arguments,
    # which every user of the machine can read.
    env = {**os.environ, ENV_VAR: target.conn_str}
    with c.cd(str(ROOT)):
        if test:
            env["RELQ_BENCH"] = "1"
            result = c.run(f"{sys.executable} -m pytest -m bench tests/bench", pty=False, env=env, warn=True)
        else:
            result = c.run(f"{sys.executable} -m bench " + " ".join(shlex.quote(a) for a in argv),
                           pty=False, env=env, warn=True)
    if result.exited:
        raise Exit(code=result.exited)


tsqlt = Collection("tsqlt", install=tsqlt_install)
schedule = Collection("schedule", add=schedule_add, list=schedule_list, pause=schedule_pause,
                      resume=schedule_resume, remove=schedule_remove)
pipeline = Collection("pipeline", enqueue=pipeline_enqueue, archive=pipeline_archive, report=pipeline_report,
                      demo=pipeline_demo)
ns = Collection(build, lint, fix, render_queues, new_queue, deploy, register_messages, status, pause, resume,
                limit, dashboard, worker, test, bench, tsqlt, pipeline, schedule)
