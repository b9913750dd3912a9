"""``invoke worker`` and ``python -m relq.worker``: run a worker on one queue until
SIGINT or SIGTERM, logging a JSON line per item outcome and a summary on exit.

Handlers come from modules named with ``--handlers``; each has an
``install(handlers)`` function that registers its callables. A queue's own
handlers are the default: ``relq.worker.notification`` for Notification.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import math
import os
import signal
import socket
import sys
from collections.abc import Callable, Mapping, Sequence
from types import FrameType
from typing import Any

from rich.console import Console
from rich.table import Table

from relq import db
from relq.errors import RelqError
from relq.worker.handlers import Handlers
from relq.worker.idle import POLL_CAP_S, POLL_S
from relq.worker.procedures import Procedures, SqlProcedures
from relq.worker.runtime import Settings, Worker
from relq.worker.scheduler import Scheduler, sql_store
from relq.worker.stats import COUNTS, Stats

DEFAULT_HANDLERS = {"Notification": ("relq.worker.notification",)}
# Every queue's claim procedure, by which the worker knows the queues a database has.
_CLAIM_PROCEDURES = ("SELECT p.name FROM sys.procedures AS p WHERE SCHEMA_NAME(p.schema_id) = N'dbo' "
                     "AND p.name LIKE N'Next[_]%[_]Batch[_]trx' ORDER BY p.name;")
QUERY_TIMEOUT_S = 120  # above the longest long-poll (60 s), below a hung lock wait's patience


def default_name() -> str:
    """host:pid, unique among running workers. A stable name (--name, one per process)
    also gets a restarted worker's unfinished items back at once instead of after
    their lease."""
    return f"{socket.gethostname()}:{os.getpid()}"


def load_handlers(queue: str, modules: Sequence[str]) -> Handlers:
    handlers = Handlers()
    for name in modules or DEFAULT_HANDLERS.get(queue, ()):
        try:
            module = importlib.import_module(name)
        except ImportError as exc:
            raise RelqError(f"--handlers {name}: cannot import it ({exc})") from None
        install = getattr(module, "install", None)
        if not callable(install):
            raise RelqError(f"--handlers {name}: the module has no install(handlers) function")
        install(handlers)
    if queue not in handlers.queues():
        raise RelqError(f"no handler is registered for queue {queue}: name a module with --handlers")
    return handlers


def check_ranges(args: argparse.Namespace) -> None:
    """Each numeric option in its range; the first one out of it is named, with its value."""
    ranges = (("--concurrency", args.concurrency, 1, 64), ("--batch", args.batch, 1, 1000),
              ("--wait-ms", args.wait_ms, 0, 60000),
              ("--max-poll-ms", args.max_poll_ms, round(POLL_S * 1000), 60000))
    for option, value, low, high in ranges:
        if not low <= value <= high:
            raise RelqError(f"{option} must be {low}-{high}, not {value}")
    if not (math.isfinite(args.grace) and args.grace >= 0):
        raise RelqError(f"--grace must be 0 seconds or more, not {args.grace:g}")


def sql_connector(conn_str: str, queue: str) -> Callable[[], Procedures]:
    """Connections for the slots; the first is opened here, so that a wrong connection
    string or a queue the database does not have fails at once, in one line, instead
    of in every slot."""

    if not queue.isidentifier():  # it goes into the procedures' names
        raise RelqError(f"queue {queue!r} does not exist: a queue's name is letters and digits")

    def connect() -> SqlProcedures:
        conn = db.connect(conn_str)
        conn.timeout = QUERY_TIMEOUT_S
        return SqlProcedures(conn, queue)

    first = connect()
    try:
        check_queue(first.conn, queue)
    finally:
        first.conn.close()
    return connect


def check_queue(conn: Any, queue: str) -> None:
    """Refuse a queue the database does not have: its claim procedure (every queue has
    dbo.Next_<Queue>_Batch_trx) is missing. The message names the queues it has.

    sys.procedures lists only the procedures the login has some permission on
    (https://learn.microsoft.com/sql/relational-databases/security/metadata-visibility-configuration):
    the queues a worker's login may claim from."""
    cursor = conn.cursor()
    try:
        database = db.query(cursor, "SELECT DB_NAME();")[0][0]
        rows = db.query(cursor, _CLAIM_PROCEDURES)
    finally:
        cursor.close()
    queues = [name.removeprefix("Next_").removesuffix("_Batch_trx") for (name,) in rows]
    if queue.casefold() not in {q.casefold() for q in queues}:
        known = (f"the queues this login may claim from are {', '.join(queues)}" if queues else
                 "this login may claim from no queue there (is the project deployed, and the login in "
                 "the QueueWorker role?)")
        raise RelqError(f"queue {queue} does not exist in database {database}: {known}")


def run_worker(settings: Settings, handlers: Handlers, connect: Callable[[], Procedures]) -> Worker:
    """Run until SIGINT or SIGTERM (in the main thread), or until the worker stops by itself
    (its ``failure`` says why); a second signal ends the grace period at once."""
    worker = Worker(settings, handlers, connect)

    signals: list[int] = []

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        signals.append(signum)
        if len(signals) > 1:
            raise SystemExit(f"worker: stopped by a second {signal.Signals(signum).name}")
        worker.request_stop()  # a flag: a signal handler must not take a lock

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    worker.run()
    return worker


def summary_table(queue: str, stats: Stats) -> Table:
    s = stats.summary()
    table = Table(title=f"relq worker: {queue}")
    for column in (*COUNTS, "mean ms", "p95 ms"):
        table.add_column(column, justify="right")
    table.add_row(*(str(s[k]) for k in COUNTS),
                  *("-" if s[k] is None else f"{s[k]:.0f}" for k in ("mean_ms", "p95_ms")))
    return table


def main(argv: Sequence[str] | None = None, *, conn: str | None = None,
         config: Mapping[str, Any] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="relq worker", description=__doc__.split("\n\n")[0])
    parser.add_argument("--queue", required=True, help="the queue: Notification, SyncQueue, ...")
    parser.add_argument("--concurrency", type=int, default=1, help="slots, each with its own connection")
    parser.add_argument("--batch", type=int, default=1, help="items a slot claims at once (1-1000)")
    parser.add_argument("--wait-ms", type=int, default=0,
                        help="0 (default): idle slots share one poll in the worker; 1-60000: each "
                             "slot's claim waits this long in SQL Server instead (a long-poll)")
    parser.add_argument("--max-poll-ms", type=int, default=round(POLL_CAP_S * 1000),
                        help=f"the shared poll's longest pause once idle a while "
                             f"({round(POLL_S * 1000)}-60000; {round(POLL_S * 1000)}: never longer)")
    parser.add_argument("--grace", type=float, default=30.0, help="seconds in-flight items get at shutdown")
    parser.add_argument("--name", default=default_name(), help="this worker's name (default host:pid)")
    parser.add_argument("--handlers", action="append", default=[], help="a module with install(handlers)")
    parser.add_argument("--type", default=None, help="claim only this job type (SyncQueue)")
    parser.add_argument("--conn", default=conn, help="ODBC connection string (default: RELQ_MSSQL)")
    parser.add_argument("--no-scheduler", action="store_true",
                        help="do not enqueue the queue's recurring schedules (docs/schedules.md)")
    parser.add_argument("--schedule-once", action="store_true",
                        help="enqueue the queue's due schedule slots once and exit; runs no handler")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    if args.schedule_once:
        return schedule_once(args.queue, args.conn, config)
    try:
        check_ranges(args)
        settings = Settings(args.queue, args.name, args.concurrency, args.batch, args.wait_ms, args.grace,
                            args.type, args.max_poll_ms / 1000)
        target = db.resolve_target(args.conn, config)
        connect = sql_connector(target.conn_str, settings.queue)  # refuses a queue the database lacks
        print(f"worker: {target}", file=sys.stderr)  # masked
        handlers = load_handlers(args.queue, args.handlers)
        scheduler = None
        if not args.no_scheduler:  # the queue's recurring schedules, beside the slots
            scheduler = Scheduler(settings.queue, sql_store(target.conn_str)).start()
        try:
            worker = run_worker(settings, handlers, connect)
        finally:
            if scheduler is not None:
                scheduler.stop()
    except RelqError as exc:
        print(f"worker: {exc}", file=sys.stderr)
        return 1
    Console(stderr=True).print(summary_table(args.queue, worker.stats))
    if worker.failure:  # a supervisor restarts a worker that failed, not one that was stopped
        print(f"worker: {worker.failure}", file=sys.stderr)
        return 1
    return 0


def schedule_once(queue: str, conn: str | None, config: Mapping[str, Any] | None) -> int:
    """``--schedule-once``: one scheduler tick for ``queue`` (an Agent job step, a cron line)."""
    try:
        if not queue.isidentifier():
            raise RelqError(f"queue {queue!r} does not exist: a queue's name is letters and digits")
        target = db.resolve_target(conn, config)
        print(f"scheduler: {target}", file=sys.stderr)  # masked
        scheduler = Scheduler(queue, sql_store(target.conn_str))
        try:
            scheduler.run_once()
        finally:
            scheduler.stop()
    except RelqError as exc:
        print(f"scheduler: {exc}", file=sys.stderr)
        return 1
    print(f"scheduler: {queue}: {scheduler.fired} slot(s) enqueued, {scheduler.lost} fired elsewhere",
          file=sys.stderr)
    return 0
