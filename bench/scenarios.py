"""The scenarios: each deploys the project into a throwaway database of its own, loads
its backlog, runs its arms one after the other and reports their ratio, so that one
run on one machine decides the verdict, however noisy the machine.

- plans: the actual plan of every dbo.Next_*_trx procedure, at a backlog of
  ``plan_backlog`` items: a scan of the queue table, or a read of more rows than the
  claim needs, fails the run (bench.plans).
- backlog: claim-and-complete throughput at ``large_backlog`` items over ``small_backlog``.
- workers: throughput at 1, 2, 4, ... and ``workers`` workers (the chart's curve); the
  ratio is ``workers`` over 1.
- batch: throughput claiming (and reporting) ``batch`` items a call over one.
- purge: claim p99 while dbo.Purge_SyncQueue_trx runs over without it, with
  ``purge_items`` finished items to purge.
- queues: each message queue (heap, FIFO, LIFO, pending), receives with ``workers``
  consumers over 1; the table is emptied and loaded afresh before each arm, so that
  the second arm does not inherit what the first left (ghost rows, a churned last page).
- claimcost, healthcost, idle: what a claim, a health read and an idle worker cost the
  server, held to bounds (bench.cost, bench.idle).
- producers, transportpurge: producers through the Add_ and Send_ procedures beside 1, 8
  and 32 consumers, and the transport's purge beside receivers and senders with RCSI
  off and on (bench.producers, bench.transport, bench.load).

Every load is followed by UPDATE STATISTICS on the tables it wrote, so that no claim
compiles on stale statistics (the workers' untimed warm-up then compiles it, outside
the timed window). Each throwaway database's files are grown once before anything is
loaded (DATA_MB, LOG_MB, growing by GROWTH_MB), so that autogrowth does not fire
during an arm.
"""

from __future__ import annotations

import os
import platform
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import asdict, dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from bench import backlog, cost, counters, idle, plans, producers, transport
from bench.report import Report, ScenarioResult
from bench.stats import Ratio, ratio
from bench.workers import WARMUP_S, Arm, ArmResult, checked, complete, run_arm
from relq import db, scaffold
from relq.errors import RelqError
from relq.live import throwaway_database

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = ("plans", "backlog", "workers", "batch", "purge", "queues", "claimcost", "healthcost", "idle",
             "producers", "transportpurge")
COSTS = ("claimcost", "healthcost", "idle")  # bench.cost and bench.idle: server counters, bounds
LOADS = {"producers": producers.producers, "transportpurge": transport.transportpurge}  # bench.load
NEXT_PROCEDURES = """
SELECT p.name FROM sys.procedures AS p
WHERE p.schema_id = SCHEMA_ID(N'dbo') AND p.name LIKE N'Next[_]%[_]trx'
ORDER BY p.name;
"""
FILTERED_INDEXES = ("SELECT i.name FROM sys.indexes AS i "
                    "WHERE i.object_id = OBJECT_ID(?) AND i.has_filter = 1;")
HAS_BATCH_SIZE = ("SELECT COUNT(*) FROM sys.parameters "
                  "WHERE object_id = OBJECT_ID(?) AND name = N'@BatchSize';")
# The tables the Notification loader writes (their statistics are updated after it).
NOTIFICATION_TABLES = ("Notification", "Notification_ResetPassword", "Notification_Email")

# The throwaway database's files, grown once before the loads: enough for the largest
# scenario at the defaults (1,000,000 SyncQueue items, or 500,000 finished ones with
# their attempts, take a few hundred MB; the log, in SIMPLE recovery, holds a few loads
# of 50,000 rows). A larger run grows them by GROWTH_MB at a time, seldom.
DATA_MB = 1024
LOG_MB = 512
GROWTH_MB = 256
PRESIZE = """
SET NOCOUNT ON;
DECLARE @DataMb INT = ?;
DECLARE @LogMb INT = ?;
DECLARE @GrowthMb INT = ?;
DECLARE @Sql NVARCHAR(MAX) = N'';
SELECT
    @Sql = @Sql + N'ALTER DATABASE ' + QUOTENAME(DB_NAME()) + N' MODIFY FILE (NAME = N'
    + QUOTENAME(f.name, NCHAR(39)) + N', SIZE = ' + CAST(w.SizeMb AS NVARCHAR(12))
    + N'MB, FILEGROWTH = ' + CAST(@GrowthMb AS NVARCHAR(12)) + N'MB);'
FROM sys.database_files AS f
CROSS APPLY (SELECT CASE WHEN f.type = 1 THEN @LogMb ELSE @DataMb END AS SizeMb) AS w
WHERE f.type IN (0, 1) AND f.size < w.SizeMb * 128;
EXEC sys.sp_executesql @Sql;
"""


@dataclass(frozen=True)
class Settings:
    seconds: float = 10.0  # per arm
    workers: int = 8  # the many workers (and consumers); the few are 1
    batch: int = 100
    backlog: int = 10_000  # due items during the workers, batch, purge and queues arms
    small_backlog: int = 1_000
    large_backlog: int = 1_000_000
    purge_items: int = 500_000  # finished items for the purge to remove
    plan_backlog: int = 100_000  # items in each queue table while its plans are captured
    warmup: float = WARMUP_S  # untimed seconds of each worker before an arm
    idle_seconds: float = 60.0  # the idle scenario's measured window
    producers: int = 8  # the producers scenario's producers
    consumers: tuple[int, ...] = (1, 8, 32)  # and its arms' consumers

    @property
    def scan_limit(self) -> int:
        """The rows a claim may read of its queue table in the plan check: it grows with the batch."""
        return plans.limit_for(self.batch)

    @property
    def worker_counts(self) -> list[int]:
        """The workers scenario's arms: 1, 2, 4, ... below ``workers``, then ``workers``."""
        counts = []
        n = 1
        while n < self.workers:
            counts.append(n)
            n *= 2
        return [*counts, self.workers]

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "scan_limit": self.scan_limit, "worker_counts": self.worker_counts}

    def check(self) -> None:
        """RelqError, in one line, naming each option no run can use."""
        problems = self.problems()
        if problems:
            raise RelqError("bench: " + "; ".join(problems))

    def problems(self) -> list[str]:
        """One for each option no run can use: what it must be, and the value it has."""
        problems = []
        if not self.seconds > 0:  # NaN included
            problems.append(f"--seconds must be more than 0, not {self.seconds:g}")
        if not self.warmup >= 0:
            problems.append(f"--warmup must be 0 or more, not {self.warmup:g}")
        if not self.idle_seconds > 0:
            problems.append(f"--idle-seconds must be more than 0, not {self.idle_seconds:g}")
        if self.workers < 1:
            problems.append(f"--workers must be at least 1, not {self.workers}")
        if self.producers < 1:
            problems.append(f"--producers must be at least 1, not {self.producers}")
        if not self.consumers or min(self.consumers) < 1:
            shown = ",".join(map(str, self.consumers))
            problems.append(f"--consumers must be counts of at least 1, not {shown or 'none'}")
        if not 1 <= self.batch <= 1000:
            problems.append(f"--batch must be 1 to 1000, not {self.batch}")
        for option, value in (("--backlog", self.backlog), ("--small-backlog", self.small_backlog),
                              ("--large-backlog", self.large_backlog), ("--purge-items", self.purge_items)):
            if value < 1:
                problems.append(f"{option} must be at least 1, not {value}")
        if 1 <= self.large_backlog < self.small_backlog:
            problems.append(f"--large-backlog must be at least --small-backlog ({self.small_backlog}), "
                            f"not {self.large_backlog}")
        # A claim may read a number of rows that follows --batch: a full scan of 10 times that
        # cannot pass for a bounded read. With a broken --batch, that option's line says enough.
        if 1 <= self.batch <= 1000 and self.plan_backlog < 10 * self.scan_limit:
            problems.append(f"--plan-backlog must be at least {10 * self.scan_limit} at --batch "
                            f"{self.batch}, not {self.plan_backlog}")
        return problems


def check_scenarios(names: Sequence[str]) -> None:
    """RelqError, in one line, for a --scenarios that names none, or one there is not."""
    unknown = [n for n in names if n not in SCENARIOS]
    there_are = f"(there are {', '.join(SCENARIOS)})"
    if len(unknown) == 1:
        raise RelqError(f"bench: --scenarios: {unknown[0]} is not a scenario {there_are}")
    if unknown:
        raise RelqError(f"bench: --scenarios: {', '.join(unknown)} are not scenarios {there_are}")
    if not names:
        raise RelqError(f"bench: --scenarios names none {there_are}")


class Runner:
    """Runs scenarios against the server ``target`` names, showing progress on ``console``."""

    def __init__(self, target: db.Target, settings: Settings, console: Console | None = None,
                 root: Path = ROOT) -> None:
        settings.check()
        self.target, self.settings, self.root = target, settings, root
        self.console = console or Console(stderr=True)
        self.progress = Progress(TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn(),
                                 console=self.console, transient=True, disable=not self.console.is_terminal)

    def run(self, names: Sequence[str] = SCENARIOS) -> Report:
        check_scenarios(names)
        report = Report(started_at=_now(), settings=self.settings.as_dict(), client=_client())
        report.warnings += client_warnings(self.settings.workers, os.cpu_count())
        conn = db.connect(self.target.conn_str)  # an unreachable server ends the run here, in one line
        try:
            report.server = counters.server(conn)
        finally:
            conn.close()
        with self.progress:
            for name in [n for n in SCENARIOS if n in names]:  # in a fixed order
                self.console.print(f"bench: {name}", markup=False)
                self.scenario(report, name)
        report.finished_at = _now()
        return report

    def scenario(self, report: Report, name: str) -> None:
        """Run one scenario into ``report``; what stops it is that scenario's problem, and the
        next one runs."""
        try:
            with self._database() as conn_str:
                if name == "plans":
                    report.plans = self._plans(conn_str)
                elif name in COSTS:
                    report.costs.append(self._cost(name, conn_str))
                elif name in LOADS:
                    report.loads.append(LOADS[name](self, conn_str))
                else:
                    report.scenarios.append(getattr(self, f"_{name}")(conn_str))
        except RelqError as exc:
            report.problems.append(f"{name}: {exc}")
        except (ValueError, OSError) as exc:  # a harness bug, or the client's machine
            report.problems.append(f"{name}: {type(exc).__name__}: {exc}")

    @contextmanager
    def _database(self) -> Iterator[str]:
        """A throwaway database with the project deployed; its connection string."""
        with throwaway_database(self.root, self.target, self.console, prefix="relq_bench") as name:
            conn_str = db.with_database(self.target.conn_str, name)
            conn = db.connect(conn_str)
            try:
                # The database is thrown away: its log need not keep what a load wrote.
                # (Azure SQL Managed Instance refuses; its log is managed anyway.)
                with suppress(db.SqlError):
                    db.run_batch(conn.cursor(), "ALTER DATABASE CURRENT SET RECOVERY SIMPLE;")
                # Grown once, so that autogrowth does not fire during an arm. (Azure SQL
                # Database refuses MODIFY FILE; it manages its files itself.)
                with suppress(db.SqlError):
                    db.query(conn.cursor(), PRESIZE, DATA_MB, LOG_MB, GROWTH_MB)
            finally:
                conn.close()
            yield conn_str

    # -- loading and measuring ---------------------------------------------------------------------

    def load(self, conn_str: str, what: str, sql: str, count: int, tables: Sequence[str],
             empty_first: bool = False) -> None:
        """Write ``count`` rows with the loader ``sql``, then update the statistics of the
        ``tables`` (in dbo) it writes; ``empty_first``: truncate those tables first."""
        task = self.progress.add_task(f"loading {count:,} {what}", total=count)
        conn = db.connect(conn_str)
        conn.timeout = 0  # a million rows may take a while on a small server
        try:
            cursor = conn.cursor()
            if empty_first:
                db.run_batch(cursor, truncate_sql(tables))
            backlog.load(conn, sql, count, progress=lambda n: self.progress.advance(task, n))
            db.run_batch(cursor, statistics_sql(tables))
        finally:
            conn.close()
            self.progress.remove_task(task)

    def measure(self, conn_str: str, arm: Arm) -> ArmResult:
        task = self.progress.add_task(f"{arm.queue}: {arm.label}", total=1.0)
        try:
            return run_arm(conn_str, arm, tick=lambda share: self.progress.update(task, completed=share))
        finally:
            self.progress.remove_task(task)

    def arm(self, label: str, workers: int | None = None, **kwargs: Any) -> Arm:
        s = self.settings
        return Arm(label=label, queue=kwargs.pop("queue", "SyncQueue"), workers=workers or s.workers,
                   seconds=s.seconds, backlog=kwargs.pop("backlog", s.backlog), warmup=s.warmup, **kwargs)

    # -- the scenarios -----------------------------------------------------------------------------

    def _plans(self, conn_str: str) -> list[plans.Verdict]:
        conn = db.connect(conn_str)
        try:
            cursor = conn.cursor()
            procedures = [row[0] for row in db.query(cursor, NEXT_PROCEDURES)]
            # The job queues of the catalogue just deployed all load alike; Notification has its own.
            loaders: dict[str, tuple[str, Sequence[str]]] = {
                q.name: (backlog.job_queue_sql(q.name), (q.name,))
                for q in scaffold.load(self.root) if q.shape == "job"}
            loaders["Notification"] = (backlog.NOTIFICATION, NOTIFICATION_TABLES)
            for queue, (sql, tables) in loaders.items():
                self.load(conn_str, f"{queue} items", sql, self.settings.plan_backlog, tables)
            verdicts = []
            for procedure in procedures:
                queue = _queue_of(procedure)
                if queue not in loaders:
                    verdicts.append(plans.Verdict(
                        f"dbo.{procedure}", [f"dbo.{queue}"], limit=self.settings.scan_limit,
                        note=f"not judged: bench/backlog.py has no loader for dbo.{queue} (add one)"))
                    continue
                verdicts.append(self._judge(conn, cursor, procedure, queue))
            return verdicts
        finally:
            conn.close()

    def _judge(self, conn: Any, cursor: Any, procedure: str, queue: str) -> plans.Verdict:
        params: dict[str, Any] = {"WaitMs": 0}
        if db.query(cursor, HAS_BATCH_SIZE, f"dbo.{procedure}")[0][0]:
            params["BatchSize"] = self.settings.batch
        # A call to compile and cache the plan first; each call under a name of its own, or
        # the second would take the first one's items back as a restarted worker's. What a
        # call claimed is completed before the next call: left in Processing, it would stay
        # in the lease index, which every claim reads, and lengthen the next one's read.
        warm = db.call(conn, f"dbo.{procedure}", LockedBy=f"bench/{procedure}/warm-up", **params)
        complete(cursor, queue, checked(warm, f"dbo.{procedure} (warming up for the plan check)"))
        captured = plans.capture(conn, f"dbo.{procedure}", LockedBy=f"bench/{procedure}", **params)
        complete(cursor, queue, captured.rows)
        filtered = [row[0] for row in db.query(cursor, FILTERED_INDEXES, f"dbo.{queue}")]
        # Every queue the templates render has its claim index, held to seeks by ScheduledFor.
        return plans.judge(f"dbo.{procedure}", captured.documents, [f"dbo.{queue}"], self.settings.scan_limit,
                           filtered, claim_index=f"IX_{queue}_Due")

    def _cost(self, name: str, conn_str: str) -> cost.CostResult:
        if name == "idle":
            return idle.idle(conn_str, self.settings.idle_seconds)
        return cost.claimcost(self, conn_str) if name == "claimcost" else cost.healthcost(self, conn_str)

    def _backlog(self, conn_str: str) -> ScenarioResult:
        s = self.settings
        small = self.arm(f"backlog {s.small_backlog:,}", backlog=s.small_backlog)
        large = self.arm(f"backlog {s.large_backlog:,}", backlog=s.large_backlog)
        self.load(conn_str, "SyncQueue items", backlog.SYNC_QUEUE, s.small_backlog, ("SyncQueue",))
        first = self.measure(conn_str, small)
        self.load(conn_str, "SyncQueue items", backlog.SYNC_QUEUE, s.large_backlog - s.small_backlog,
                  ("SyncQueue",))
        second = self.measure(conn_str, large)
        return ScenarioResult(
            "backlog", "Does a claim cost the same at a large backlog as at a small one?", [first, second],
            [_throughput(f"items/s at a backlog of {s.large_backlog:,} over {s.small_backlog:,}",
                         second, first)])

    def _workers(self, conn_str: str) -> ScenarioResult:
        s = self.settings
        self.load(conn_str, "SyncQueue items", backlog.SYNC_QUEUE, s.backlog, ("SyncQueue",))
        arms = [self.measure(conn_str, self.arm(f"{n} worker{'s' if n > 1 else ''}", workers=n))
                for n in s.worker_counts]
        return ScenarioResult(
            "workers", "Do workers skip each other's rows (READPAST) instead of waiting?", arms,
            [_throughput(f"items/s with {s.workers} workers over 1", arms[-1], arms[0])])

    def _batch(self, conn_str: str) -> ScenarioResult:
        s = self.settings
        size = max(s.backlog, 2 * s.workers * s.batch)  # enough for every worker's batch, twice
        self.load(conn_str, "SyncQueue items", backlog.SYNC_QUEUE, size, ("SyncQueue",))
        single = self.measure(conn_str, self.arm("single claims", backlog=size))
        batched = self.measure(conn_str, self.arm(f"batches of {s.batch}", batch=s.batch, backlog=size))
        return ScenarioResult(
            "batch", "Do batches amortize the commits?", [single, batched],
            [_throughput(f"items/s claiming {s.batch} a call over 1", batched, single)])

    def _purge(self, conn_str: str) -> ScenarioResult:
        s = self.settings
        self.load(conn_str, "finished SyncQueue items", backlog.FINISHED_SYNC_QUEUE, s.purge_items,
                  ("SyncQueue", "SyncQueueAttempt"))
        self.load(conn_str, "SyncQueue items", backlog.SYNC_QUEUE, s.backlog, ("SyncQueue",))
        quiet = self.measure(conn_str, self.arm("without a purge"))
        purging = self.measure(conn_str, self.arm("while a purge runs", purge=True))
        return purge_result(quiet, purging)

    def _queues(self, conn_str: str) -> ScenarioResult:
        s = self.settings
        arms: list[ArmResult] = []
        ratios = []
        for kind in backlog.MESSAGE_QUEUES:
            measured = []
            for label, workers in (("1 consumer", 1), (f"{s.workers} consumers", s.workers)):
                # Afresh for each arm: the second does not inherit the table the first churned.
                self.load(conn_str, f"{kind} messages", backlog.message_sql(kind), s.backlog, (kind,),
                          empty_first=True)
                measured.append(self.measure(conn_str, self.arm(label, workers=workers, queue=kind)))
            one, many = measured
            arms += [one, many]
            ratios.append(_throughput(f"{kind}: receives/s with {s.workers} consumers over 1", many, one))
        return ScenarioResult("queues", "How do the message queues scale with consumers?", arms, ratios)


def _queue_of(procedure: str) -> str:
    """Next_SyncQueue_Batch_trx -> SyncQueue."""
    name = procedure.removeprefix("Next_").removesuffix("_trx")
    return name.removesuffix("_Batch")


def _dbo(table: str) -> str:
    if not table.isidentifier():
        raise ValueError(f"not a table name: {table!r}")
    return f"dbo.{table}"


def statistics_sql(tables: Sequence[str]) -> str:
    """UPDATE STATISTICS on each table (in dbo), after a load: the claims then compile on
    what the tables hold, in the warm-up, instead of recompiling inside an arm."""
    return "\n".join(f"UPDATE STATISTICS {_dbo(t)};" for t in tables)


def truncate_sql(tables: Sequence[str]) -> str:
    return "\n".join(f"TRUNCATE TABLE {_dbo(t)};" for t in tables)


def client_warnings(workers: int, cpus: int | None) -> list[str]:
    """What may bound the figures on the client's side: N worker processes and the parent
    (the feeder) want N + 1 CPUs."""
    if cpus is not None and workers + 1 > cpus:
        return [f"the client has {cpus} CPUs for {workers} worker processes and the feeder: the figures "
                f"with {workers} workers, and their ratios, may be bound by the client, not the server"]
    return []


def purge_result(quiet: ArmResult, purging: ArmResult) -> ScenarioResult:
    """The purge scenario's ratios; when the purge ran out of finished items before the
    arm's end, each says so (the arm then ran partly without a purge)."""
    ratios = [_p99("claim p99 while a purge runs over without", purging, quiet),
              _throughput("items/s while a purge runs over without", purging, quiet)]
    if purging.purge_ran_dry_early:
        dry = (f"the purge ran dry after {purging.purge_ran_dry_s:.1f} s of {purging.arm.seconds:g} s "
               f"(raise --purge-items)")
        ratios = [replace(r, note=f"{r.note}; {dry}" if r.note else dry) for r in ratios]
    return ScenarioResult("purge", "Does a purge leave the claims alone?", [quiet, purging], ratios)


def _throughput(name: str, top: ArmResult, bottom: ArmResult) -> Ratio:
    return ratio(name, (top.arm.label, top.items_per_s), (bottom.arm.label, bottom.items_per_s))


def _p99(name: str, top: ArmResult, bottom: ArmResult) -> Ratio:
    return ratio(name, (top.arm.label, top.claim_ms.p99 if top.claim_ms else None),
                 (bottom.arm.label, bottom.claim_ms.p99 if bottom.claim_ms else None))


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _client() -> dict[str, Any]:
    return {"host": platform.node(), "platform": platform.platform(), "cpus": os.cpu_count(),
            "python": sys.version.split()[0]}


def run(target: db.Target, settings: Settings, names: Sequence[str] = SCENARIOS,
        console: Console | None = None, clock: Callable[[], float] = time.monotonic) -> Report:
    """Run the scenarios ``names`` and return the report (see bench.report)."""
    started = clock()
    report = Runner(target, settings, console).run(names)
    report.seconds = round(clock() - started, 1)
    return report
