"""The scenarios: each deploys the project into a throwaway database of its own, loads
its backlog, runs its arms one after the other and reports their ratio, so that one
run on one machine decides the verdict, however noisy the machine.

- plans: the actual plan of every dbo.Next_*_trx procedure, at a backlog of
  ``plan_backlog`` items: a scan of the queue table fails the run (bench.plans).
- backlog: claim-and-complete throughput at ``large_backlog`` items over ``small_backlog``.
- workers: throughput with ``workers`` workers over 1.
- batch: throughput claiming (and reporting) ``batch`` items a call over one.
- purge: claim p99 while dbo.Purge_SyncQueue_trx runs over without it, with
  ``purge_items`` finished items to purge.
- queues: each message queue (heap, FIFO, LIFO, pending), receives with ``workers``
  consumers over 1.
"""

from __future__ import annotations

import os
import platform
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from bench import backlog, counters, plans
from bench.report import Report, ScenarioResult
from bench.stats import Ratio, ratio
from bench.workers import Arm, ArmResult, run_arm
from relq import db
from relq.errors import RelqError
from relq.live import throwaway_database

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = ("plans", "backlog", "workers", "batch", "purge", "queues")
NEXT_PROCEDURES = """
SELECT p.name FROM sys.procedures AS p
WHERE p.schema_id = SCHEMA_ID(N'dbo') AND p.name LIKE N'Next[_]%[_]trx'
ORDER BY p.name;
"""
FILTERED_INDEXES = ("SELECT i.name FROM sys.indexes AS i "
                    "WHERE i.object_id = OBJECT_ID(?) AND i.has_filter = 1;")
HAS_BATCH_SIZE = ("SELECT COUNT(*) FROM sys.parameters "
                  "WHERE object_id = OBJECT_ID(?) AND name = N'@BatchSize';")
PLAN_LOADERS = {"SyncQueue": backlog.SYNC_QUEUE, "Notification": backlog.NOTIFICATION}
# A queue of shape "job" (database/queues.toml) has dbo.<Queue>Type and an EntityKey.
IS_JOB_QUEUE = ("SELECT COUNT(*) FROM sys.columns AS c "
                "WHERE c.object_id = OBJECT_ID(?) AND c.name = N'EntityKey' AND OBJECT_ID(?) IS NOT NULL;")


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
    scan_limit: int = plans.DEFAULT_LIMIT

    def check(self) -> None:
        """RelqError for settings no run can use."""
        if self.seconds <= 0 or self.workers < 1 or not 1 <= self.batch <= 1000:
            raise RelqError("bench: --seconds must be positive, --workers at least 1, --batch 1 to 1000")
        too_small = min(self.backlog, self.small_backlog, self.purge_items) < 1
        if too_small or self.large_backlog < self.small_backlog:
            raise RelqError("bench: backlogs must be at least 1, the large one no smaller than the small one")
        if self.plan_backlog < 10 * self.scan_limit:
            raise RelqError(f"bench: --plan-backlog must be at least 10 times the scan limit "
                            f"({10 * self.scan_limit}), or a full scan could pass for a bounded one")


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
        unknown = [n for n in names if n not in SCENARIOS]
        if unknown:
            raise RelqError(f"bench: no scenario {', '.join(unknown)} (there are {', '.join(SCENARIOS)})")
        report = Report(started_at=_now(), settings=asdict(self.settings), client=_client())
        conn = db.connect(self.target.conn_str)  # an unreachable server ends the run here, in one line
        try:
            report.server = counters.server(conn)
        finally:
            conn.close()
        with self.progress:
            for name in [n for n in SCENARIOS if n in names]:  # in a fixed order
                self.console.print(f"bench: {name}", markup=False)
                try:
                    with self._database() as conn_str:
                        if name == "plans":
                            report.plans = self._plans(conn_str)
                        else:
                            report.scenarios.append(getattr(self, f"_{name}")(conn_str))
                except RelqError as exc:
                    report.problems.append(f"{name}: {exc}")
        report.finished_at = _now()
        return report

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
            finally:
                conn.close()
            yield conn_str

    # -- loading and measuring ---------------------------------------------------------------------

    def load(self, conn_str: str, what: str, sql: str, count: int) -> None:
        task = self.progress.add_task(f"loading {count:,} {what}", total=count)
        conn = db.connect(conn_str)
        conn.timeout = 0  # a million rows may take a while on a small server
        try:
            backlog.load(conn, sql, count, progress=lambda n: self.progress.advance(task, n))
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
                   seconds=s.seconds, backlog=kwargs.pop("backlog", s.backlog), **kwargs)

    # -- the scenarios -----------------------------------------------------------------------------

    def _plans(self, conn_str: str) -> list[plans.Verdict]:
        conn = db.connect(conn_str)
        try:
            cursor = conn.cursor()
            procedures = [row[0] for row in db.query(cursor, NEXT_PROCEDURES)]
            loaders = {}
            for queue in sorted({_queue_of(p) for p in procedures}):
                if queue in PLAN_LOADERS:
                    loaders[queue] = PLAN_LOADERS[queue]
                elif db.query(cursor, IS_JOB_QUEUE, f"dbo.{queue}", f"dbo.{queue}Type")[0][0]:
                    loaders[queue] = backlog.job_queue_sql(queue)
            for queue, sql in loaders.items():
                self.load(conn_str, f"{queue} items", sql, self.settings.plan_backlog)
            verdicts = []
            for procedure in procedures:
                queue = _queue_of(procedure)
                if queue not in loaders:
                    verdicts.append(plans.Verdict(
                        f"dbo.{procedure}", [f"dbo.{queue}"], limit=self.settings.scan_limit,
                        note=f"not judged: bench/backlog.py has no loader for dbo.{queue} (add one)"))
                    continue
                params: dict[str, Any] = {"WaitMs": 0}
                if db.query(cursor, HAS_BATCH_SIZE, f"dbo.{procedure}")[0][0]:
                    params["BatchSize"] = self.settings.batch
                # A call to compile and cache the plan first; each call under a name of its own,
                # or the second would take the first one's items back as a restarted worker's.
                db.call(conn, f"dbo.{procedure}", LockedBy=f"bench/{procedure}/warm-up", **params)
                documents = plans.capture(conn, f"dbo.{procedure}", LockedBy=f"bench/{procedure}", **params)
                filtered = [row[0] for row in db.query(cursor, FILTERED_INDEXES, f"dbo.{queue}")]
                verdicts.append(plans.judge(f"dbo.{procedure}", documents, [f"dbo.{queue}"],
                                            self.settings.scan_limit, filtered))
            return verdicts
        finally:
            conn.close()

    def _backlog(self, conn_str: str) -> ScenarioResult:
        s = self.settings
        small = self.arm(f"backlog {s.small_backlog:,}", backlog=s.small_backlog)
        large = self.arm(f"backlog {s.large_backlog:,}", backlog=s.large_backlog)
        self.load(conn_str, "SyncQueue items", backlog.SYNC_QUEUE, s.small_backlog)
        first = self.measure(conn_str, small)
        self.load(conn_str, "SyncQueue items", backlog.SYNC_QUEUE, s.large_backlog - s.small_backlog)
        second = self.measure(conn_str, large)
        return ScenarioResult(
            "backlog", "Does a claim cost the same at a large backlog as at a small one?", [first, second],
            [_throughput(f"items/s at a backlog of {s.large_backlog:,} over {s.small_backlog:,}",
                         second, first)])

    def _workers(self, conn_str: str) -> ScenarioResult:
        s = self.settings
        self.load(conn_str, "SyncQueue items", backlog.SYNC_QUEUE, s.backlog)
        one = self.measure(conn_str, self.arm("1 worker", workers=1))
        many = self.measure(conn_str, self.arm(f"{s.workers} workers"))
        return ScenarioResult(
            "workers", "Do workers skip each other's rows (READPAST) instead of waiting?", [one, many],
            [_throughput(f"items/s with {s.workers} workers over 1", many, one)])

    def _batch(self, conn_str: str) -> ScenarioResult:
        s = self.settings
        size = max(s.backlog, 2 * s.workers * s.batch)  # enough for every worker's batch, twice
        self.load(conn_str, "SyncQueue items", backlog.SYNC_QUEUE, size)
        single = self.measure(conn_str, self.arm("single claims", backlog=size))
        batched = self.measure(conn_str, self.arm(f"batches of {s.batch}", batch=s.batch, backlog=size))
        return ScenarioResult(
            "batch", "Do batches amortize the commits?", [single, batched],
            [_throughput(f"items/s claiming {s.batch} a call over 1", batched, single)])

    def _purge(self, conn_str: str) -> ScenarioResult:
        s = self.settings
        self.load(conn_str, "finished SyncQueue items", backlog.FINISHED_SYNC_QUEUE, s.purge_items)
        self.load(conn_str, "SyncQueue items", backlog.SYNC_QUEUE, s.backlog)
        quiet = self.measure(conn_str, self.arm("without a purge"))
        purging = self.measure(conn_str, self.arm("while a purge runs", purge=True))
        return ScenarioResult(
            "purge", "Does a purge leave the claims alone?", [quiet, purging],
            [_p99("claim p99 while a purge runs over without", purging, quiet),
             _throughput("items/s while a purge runs over without", purging, quiet)])

    def _queues(self, conn_str: str) -> ScenarioResult:
        s = self.settings
        arms: list[ArmResult] = []
        ratios = []
        for kind in backlog.MESSAGE_QUEUES:
            self.load(conn_str, f"{kind} messages", backlog.message_sql(kind), s.backlog)
            one = self.measure(conn_str, self.arm("1 consumer", workers=1, queue=kind))
            many = self.measure(conn_str, self.arm(f"{s.workers} consumers", queue=kind))
            arms += [one, many]
            ratios.append(_throughput(f"{kind}: receives/s with {s.workers} consumers over 1", many, one))
        return ScenarioResult("queues", "How do the message queues scale with consumers?", arms, ratios)


def _queue_of(procedure: str) -> str:
    """Next_SyncQueue_Batch_trx -> SyncQueue."""
    name = procedure.removeprefix("Next_").removesuffix("_trx")
    return name.removesuffix("_Batch")


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

