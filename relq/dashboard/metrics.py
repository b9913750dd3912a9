"""/metrics: the queues in Prometheus' text format, written by prometheus_client.

Gauges, read from the health view at each scrape (as the overview reads it):
relq_queue_items (a series per queue and unfinished state: Pending, Processing, Error,
Paused; none for a finished state, which QueueHealth_V does not count),
relq_queue_oldest_due_seconds and relq_queue_past_lease_items; and from
dbo.QueueControl_V, relq_queue_paused (1 while claims take nothing: a series per queue with
type "", and per job type, 1 also when its queue is paused), relq_queue_type_limit (a series
per limited type) and relq_queue_group_limit (per queue; 1 unless set).

Counters, kept by this process: relq_queue_enqueued_total, and the attempts that ended
Completed, Failed or in Error (to be retried), relq_queue_completed_total,
relq_queue_failed_total, relq_queue_retried_total; and the histogram of those attempts'
durations, relq_queue_attempt_duration_seconds (by queue and outcome, buckets 5 ms to
5 min). They count from this process's first scrape: a restart starts them again from 0,
which Prometheus' rate() and increase() take as a counter reset, by design. Each
dashboard process counts on its own, so two replicas are two series (their instance label).

Why they are counted here, and not in the database. A counter needs a total that only
grows; COUNT over all attempts grows with the history a queue keeps (finished items and
their attempts stay until purged), and the cost rule of relq's views is that a scrape
reads what happened lately, not the history. A counter row that the report procedure
increments would be the one row every report of a queue updates: a lock that serialises
every worker's report on it, for a figure that only a scraper reads (and its table a
migration). So each scrape reads what changed since the last one, through two views
QueueMonitor may read, and adds it up:

- The window: the attempts that started, and the items enqueued, since the bound the
  scrape before set (``since``): one range seek per queue, on IX_<Queue>Attempt_Started
  (dbo.QueueAttemptOutcome_V) and on the queue's clustered key (dbo.QueueItemKey_V),
  aggregated in the database (counts per queue, outcome and duration bucket). A scrape
  sets the next bound to ``WINDOW_S`` before the database's now (never before ``since``),
  and reads both the counts since ``since`` and since that bound. What it counts is the
  difference between its count since ``since`` and the last scrape's count since the same
  time: the attempts that ended, and the items that became visible, in between. An
  attempt is counted once, when it has an outcome; an item or attempt whose transaction
  commits late, but within ``WINDOW_S`` of its key or StartedAt, is counted when it commits.
- Attempts that run longer: an attempt still running when the bound passes its StartedAt
  leaves the window; the scrape that sees it leave remembers its key and reads it again
  at every later scrape, by its StartedAt (a seek on the same index), until it has ended
  (counted then, once) or is gone. There is no limit on how long an attempt may run: the
  followed attempts are at most the items in Processing.
- A gap: a scrape more than ``MAX_GAP_S`` after the one before starts counting again from
  then (the counters keep their totals; what ended in the gap is not counted), so that no
  scrape reads more than ``MAX_GAP_S`` plus the window of attempts.

What a scrape reads therefore follows the work of the last ``WINDOW_S`` plus the time
since the scrape before, and the attempts in flight, never the history. Its limits: an
attempt or item whose transaction commits more than ``WINDOW_S`` after its StartedAt or key
(a claim inside a caller's long transaction, Next_<Queue>_utx) is never counted; an attempt
running when the process starts, started more than ``WINDOW_S`` before its first scrape, is
not counted when it ends; and an attempt purged within ``WINDOW_S`` of starting, or an item
within ``WINDOW_S`` of its key, is taken from what the next scrape counts of its kind (which
may then count too few; a counter never goes down).

The overview's per-minute figures and p50/p95 are QueueThroughput_V's (relq.status);
/metrics gives rates through rate() on its counters, not as gauges of rates over a fixed
15 minutes (which an alert could not take over its own window), and durations as a
histogram (histogram_quantile), not as a gauge with a quantile label."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

from relq.dashboard.store import BUCKETS_MS, COUNTED, AttemptKey, CounterReading, Store, bucket_of
from relq.status import QueueHealth

WINDOW_S = 60.0  # how late a transaction may commit and still be counted; the window each scrape reads
MAX_GAP_S = 900.0  # a scrape later than this after the one before starts counting again
# The counter each outcome counts in, and what its help text says of it.
COUNTERS = {"Completed": ("completed", "ended Completed"), "Failed": ("failed", "ended Failed"),
            "Error": ("retried", "ended in Error, to be retried")}
RESET = ("Counted by this dashboard process since its first scrape: a restart starts again from 0, "
         "which rate() and increase() take as a counter reset.")


def _buckets() -> list[int]:
    return [0] * (len(BUCKETS_MS) + 1)


@dataclass
class QueueTotals:
    """What a queue did since the first scrape: attempts per outcome (COUNTED), the
    durations known of them per outcome (a count per bucket of BUCKETS_MS and one above
    them all, and their sum in ms), and the items enqueued."""

    attempts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COUNTED, 0))
    buckets: dict[str, list[int]] = field(default_factory=lambda: {o: _buckets() for o in COUNTED})
    duration_ms: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COUNTED, 0))
    enqueued: int = 0

    def copy(self) -> QueueTotals:
        return QueueTotals(dict(self.attempts), {o: list(b) for o, b in self.buckets.items()},
                           dict(self.duration_ms), self.enqueued)


class Counters:
    """The counters of one dashboard process (see the module's docstring). ``scrape`` reads
    what changed since the last scrape and adds it; ``totals`` is what they hold."""

    def __init__(self, window_s: float = WINDOW_S, max_gap_s: float = MAX_GAP_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.window_ms = int(window_s * 1000)
        self.max_gap_s = max_gap_s
        self.clock = clock
        self._lock = threading.Lock()
        self._totals: dict[str, QueueTotals] = {}
        self._since: datetime | None = None  # the bound the last scrape set; None: none yet
        self._last: float | None = None  # when it ran, by ``clock``
        # The last scrape's counts since its bound, which the next scrape reads as since ``since``:
        # per (queue, outcome, bucket), (attempts, duration ms); per queue, items.
        self._ended: dict[tuple[str, str, int | None], tuple[int, int]] = {}
        self._items: dict[str, int] = {}
        self._followed: set[AttemptKey] = set()  # attempts that left the window running

    @property
    def followed(self) -> frozenset[AttemptKey]:
        return frozenset(self._followed)

    def scrape(self, store: Store) -> None:
        """Read what changed since the last scrape and count it (the first scrape counts
        nothing: it is where counting starts). A read that fails changes nothing."""
        with self._lock:
            now = self.clock()
            since = self._since
            if self._last is not None and now - self._last > self.max_gap_s:
                since = None  # too long ago: start again from the window before now
            reading = store.counter_reading(since, self.window_ms, sorted(self._followed))
            self._count(reading, counting=since is not None)
            self._last = now

    def _count(self, reading: CounterReading, counting: bool) -> None:
        if counting:
            for e in reading.ended:
                attempts, duration_ms = self._ended.get((e.queue, e.outcome, e.bucket), (0, 0))
                self._add(e.queue, e.outcome, e.bucket, max(e.attempts - attempts, 0),
                          max(e.duration_ms - duration_ms, 0))
            for queue, (items, _) in reading.enqueued.items():
                self._queue(queue).enqueued += max(items - self._items.get(queue, 0), 0)
        rows = {r.key: r for r in reading.followed}
        for key in sorted(self._followed):
            row = rows.get(key)
            if row is not None and row.outcome is None:
                continue  # still running
            self._followed.discard(key)  # ended, or gone (its item purged)
            if row is not None and row.outcome in COUNTED:
                known = row.duration_ms is not None
                self._add(key.queue, row.outcome, bucket_of(row.duration_ms) if known else None, 1,
                          row.duration_ms or 0)
        self._followed.update(reading.leaving)
        self._ended = {(e.queue, e.outcome, e.bucket): (e.attempts_past_bound, e.duration_ms_past_bound)
                       for e in reading.ended}
        self._items = {queue: past for queue, (_, past) in reading.enqueued.items()}
        self._since = reading.bound

    def _queue(self, queue: str) -> QueueTotals:
        return self._totals.setdefault(queue, QueueTotals())

    def _add(self, queue: str, outcome: str, bucket: int | None, attempts: int, duration_ms: int) -> None:
        if not attempts:
            return
        totals = self._queue(queue)
        totals.attempts[outcome] += attempts
        if bucket is not None:
            totals.buckets[outcome][bucket] += attempts
            totals.duration_ms[outcome] += duration_ms

    def totals(self) -> dict[str, QueueTotals]:
        """A copy of every queue's totals."""
        with self._lock:
            return {queue: t.copy() for queue, t in self._totals.items()}


def _seconds(ms: int) -> str:
    return floatToGoString(ms / 1000)  # as prometheus_client writes its own buckets: 0.005, 1.0, 300.0


class _Snapshot(Collector):
    def __init__(self, queues: list[QueueHealth], totals: Mapping[str, QueueTotals] | None) -> None:
        self.queues = queues
        self.totals = totals

    def collect(self) -> Iterator[Metric]:
        yield from self._gauges()
        if self.totals is not None:
            yield from self._counters(self.totals)

    def _gauges(self) -> Iterator[Metric]:
        items = GaugeMetricFamily("relq_queue_items",
                                  "Unfinished items per queue and status (dbo.QueueHealth_V): Pending, "
                                  "Processing, Error, Paused; finished items are not counted.",
                                  labels=["queue", "status"])
        oldest = GaugeMetricFamily(
            "relq_queue_oldest_due_seconds",
            "How long the oldest due Pending or Error item has waited since it was due; 0 when none is due.",
            labels=["queue"])
        past_lease = GaugeMetricFamily(
            "relq_queue_past_lease_items", "Processing items whose lease ran out: their worker is gone.",
            labels=["queue"])
        paused = GaugeMetricFamily(
            "relq_queue_paused",
            "1 while claims take nothing of the queue (type \"\") or job type (dbo.Pause_Queue_trx; a type "
            "is 1 also while its queue is paused), else 0.", labels=["queue", "type"])
        type_limit = GaugeMetricFamily(
            "relq_queue_type_limit", "At most this many items of the job type in Processing at once "
            "(dbo.Limit_Queue_trx); no series for a type without a limit.", labels=["queue", "type"])
        group_limit = GaugeMetricFamily(
            "relq_queue_group_limit", "At most this many items of one GroupKey in Processing at once, "
            "the earliest first (1: one at a time, in order).", labels=["queue"])
        for q in self.queues:
            for state, count in sorted(q.items.items()):
                items.add_metric([q.queue, state], count)
            oldest.add_metric([q.queue], q.oldest_due_s or 0)
            past_lease.add_metric([q.queue], q.past_lease)
            paused.add_metric([q.queue, ""], int(q.paused))
            for type_, stopped in sorted(q.type_paused.items()):
                paused.add_metric([q.queue, type_], int(stopped))
            for type_, limit in sorted(q.type_limits.items()):
                type_limit.add_metric([q.queue, type_], limit)
            group_limit.add_metric([q.queue], q.group_limit)
        yield from (items, oldest, past_lease, paused, type_limit, group_limit)

    def _counters(self, totals: Mapping[str, QueueTotals]) -> Iterator[Metric]:
        names = sorted({q.queue for q in self.queues} | set(totals))
        every = {name: totals.get(name) or QueueTotals() for name in names}
        enqueued = CounterMetricFamily("relq_queue_enqueued", f"Items enqueued. {RESET}", labels=["queue"])
        for name, t in every.items():
            enqueued.add_metric([name], t.enqueued)
        yield enqueued
        for outcome, (counter, ended) in COUNTERS.items():
            family = CounterMetricFamily(f"relq_queue_{counter}", f"Attempts that {ended}. {RESET}",
                                         labels=["queue"])
            for name, t in every.items():
                family.add_metric([name], t.attempts[outcome])
            yield family
        durations = HistogramMetricFamily(
            "relq_queue_attempt_duration_seconds",
            "Durations of the attempts that ended Completed, Failed or in Error, when known (an attempt "
            f"abandoned by a worker that vanished has none). {RESET}",
            labels=["queue", "outcome"])
        for name, t in every.items():
            for outcome in COUNTED:
                running, cumulative = 0, []
                for top, n in zip((*(_seconds(ms) for ms in BUCKETS_MS), "+Inf"), t.buckets[outcome],
                                  strict=True):
                    running += n
                    cumulative.append((top, running))
                durations.add_metric([name, outcome], cumulative, t.duration_ms[outcome] / 1000)
        yield durations


def exposition(queues: Iterable[QueueHealth], totals: Mapping[str, QueueTotals] | None = None) -> bytes:
    """The text format (version 0.0.4), as Prometheus scrapes it: the gauges of ``queues``,
    and with ``totals`` (Counters.totals) the counters and the duration histogram."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Snapshot(list(queues), totals))
    return generate_latest(registry)


CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
