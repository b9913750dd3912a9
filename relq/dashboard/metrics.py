"""/metrics: the health views in Prometheus' text format, written by prometheus_client.

Each scrape reads the views once (through the store, as the overview does); nothing is
counted in this process, so every dashboard replica and a restart report the same
figures. The rates and durations are QueueThroughput_V's, over its last 15 minutes.

relq_queue_items has a series per queue and unfinished state (Pending, Processing,
Error, Paused) and none for a finished state: QueueHealth_V does not count finished
items, so that a scrape costs the same however much history a queue keeps. What a
queue finished is relq_queue_completed_per_minute and relq_queue_failed_per_minute."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from relq.status import QueueHealth


class _Snapshot(Collector):
    def __init__(self, queues: list[QueueHealth]) -> None:
        self.queues = queues

    def collect(self) -> Iterator[Metric]:
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
        rates = {
            name: GaugeMetricFamily(f"relq_queue_{name}_per_minute",
                                    f"Attempts that ended {outcome} per minute, over the last 15 minutes.",
                                    labels=["queue"])
            for name, outcome in (("completed", "Completed"), ("failed", "Failed"),
                                  ("retried", "in Error, to be retried"))
        }
        durations = GaugeMetricFamily(
            "relq_queue_attempt_duration_seconds",
            "Percentiles of the durations of the attempts that did their work, over the last 15 minutes.",
            labels=["queue", "quantile"])
        for q in self.queues:
            for state, count in sorted(q.items.items()):
                items.add_metric([q.queue, state], count)
            oldest.add_metric([q.queue], q.oldest_due_s or 0)
            past_lease.add_metric([q.queue], q.past_lease)
            rates["completed"].add_metric([q.queue], q.completed_per_min)
            rates["failed"].add_metric([q.queue], q.failed_per_min)
            rates["retried"].add_metric([q.queue], q.retried_per_min)
            for quantile, ms in (("0.5", q.p50_ms), ("0.95", q.p95_ms)):
                if ms is not None:
                    durations.add_metric([q.queue, quantile], ms / 1000)
        yield from (items, oldest, past_lease, *rates.values(), durations)


def exposition(queues: Iterable[QueueHealth]) -> bytes:
    """The text format (version 0.0.4), as Prometheus scrapes it."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Snapshot(list(queues)))
    return generate_latest(registry)


CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
