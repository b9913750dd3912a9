"""/metrics offline: its exposition against Prometheus' naming rules (promtool check
metrics' rules, checked here on what prometheus_client's parser reads), the counters'
accumulation over successive scrapes of a store that answers as the views do
(tests/dashboard/fake_store.py), the SQL a scrape sends, and the route."""

from __future__ import annotations

import random
import re
from datetime import datetime, timedelta

import pytest
from prometheus_client.parser import text_string_to_metric_families
from starlette.testclient import TestClient

from relq import db
from relq.dashboard.app import Settings, create_app
from relq.dashboard.metrics import MAX_GAP_S, Counters, QueueTotals, exposition
from relq.dashboard.store import (
    BUCKETS_MS,
    COUNTED,
    AttemptKey,
    SqlStore,
    bucket_of,
    counter_batch,
    followed_batches,
)
from relq.status import QueueHealth
from tests.dashboard.fake_store import T0, FakeStore
from tests.test_db import FakeConnection, FakeCursor

WINDOW_S = 30.0

# -- the naming rules -----------------------------------------------------------------------

SNAKE = re.compile(r"^[a-z][a-z0-9_]*$")
# Units other than the base ones (promtool's "use base unit" rule: seconds, bytes, ...), and
# rates over a fixed time, which a gauge cannot give to rate() over an alert's own window.
NOT_BASE = re.compile(r"(^|_)(milliseconds|microseconds|nanoseconds|minutes|hours|days|ms|percent|"
                      r"per_second|per_minute|per_hour)(_|$)")
RESERVED = ("_total", "_count", "_sum", "_bucket", "_created")


def lint(text: str) -> list[str]:
    """What promtool check metrics (promlint) would say of ``text``, as the problems found."""
    problems = []
    # The parser names a counter's family without _total, and a counter sample without it
    # with it: the text's own names are read from its lines.
    for name, kind in re.findall(r"^# TYPE (\S+) (\S+)$", text, re.M):
        named = set(re.findall(rf"^({re.escape(name.removesuffix('_total'))}\w*)[{{ ]", text, re.M))
        if kind == "counter" and (not name.endswith("_total") or named - {name, name[:-6] + "_created"}):
            problems.append(f"{name}: a counter not named _total")
    for family in text_string_to_metric_families(text):
        name, kind = family.name, family.type
        if not SNAKE.match(name):
            problems.append(f"{name}: not snake_case")
        if not family.documentation.strip():
            problems.append(f"{name}: no help text")
        if NOT_BASE.search(name):
            problems.append(f"{name}: not in base units, or a rate as a gauge")
        if kind not in ("counter", "histogram", "summary") and name.endswith(RESERVED):
            problems.append(f"{name}: a {kind} named with a counter's or histogram's suffix")
        for sample in family.samples:
            if kind != "summary" and "quantile" in sample.labels:
                problems.append(f"{sample.name}: a quantile label on a {kind}")
        if kind == "histogram":
            problems += _histogram_problems(family)
    return problems


def _histogram_problems(family) -> list[str]:
    problems = []
    series: dict[tuple, dict] = {}
    for s in family.samples:
        labels = tuple(sorted((k, v) for k, v in s.labels.items() if k != "le"))
        one = series.setdefault(labels, {"buckets": []})
        if s.name == family.name + "_bucket":
            if "le" not in s.labels:
                problems.append(f"{s.name}: a bucket without le")
                continue
            one["buckets"].append((float(s.labels["le"]), s.value))
        elif s.name in (family.name + "_sum", family.name + "_count"):
            one[s.name.rsplit("_", 1)[1]] = s.value
    for labels, one in series.items():
        les = [le for le, _ in one["buckets"]]
        counts = [n for _, n in one["buckets"]]
        if not les or les[-1] != float("inf") or les != sorted(les) or counts != sorted(counts):
            problems.append(f"{family.name}{dict(labels)}: buckets not cumulative up to +Inf")
        if "sum" not in one or "count" not in one or (counts and one["count"] != counts[-1]):
            problems.append(f"{family.name}{dict(labels)}: no _sum, or a _count other than +Inf's")
    return problems


def samples(text: str) -> dict[tuple, float]:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def health(*names: str) -> list[QueueHealth]:
    return [QueueHealth(n, items={"Pending": 2, "Processing": 0, "Error": 1, "Paused": 0}) for n in names]


def some_totals() -> dict[str, QueueTotals]:
    totals = QueueTotals(enqueued=7)
    totals.attempts.update(Completed=3, Failed=1, Error=2)
    totals.buckets["Completed"][bucket_of(4)] += 2
    totals.buckets["Completed"][bucket_of(400_000)] += 1
    totals.duration_ms["Completed"] = 4 + 4 + 400_000
    return {"Q": totals}


def test_the_exposition_follows_prometheus_naming_rules() -> None:
    text = exposition(health("Q", "R"), some_totals()).decode()
    assert lint(text) == []
    kinds = {f.name: f.type for f in text_string_to_metric_families(text)}
    assert kinds == {"relq_queue_items": "gauge", "relq_queue_oldest_due_seconds": "gauge",
                     "relq_queue_past_lease_items": "gauge", "relq_queue_paused": "gauge",
                     "relq_queue_type_limit": "gauge", "relq_queue_group_limit": "gauge",
                     "relq_queue_enqueued": "counter",
                     "relq_queue_completed": "counter", "relq_queue_failed": "counter",
                     "relq_queue_retried": "counter", "relq_queue_attempt_duration_seconds": "histogram"}
    assert not any("per_minute" in name or "quantile" in name for name, _ in samples(text))


def test_the_rules_find_what_promlint_flags() -> None:
    # What /metrics used to give: a gauge with a quantile label, a rate per minute as a gauge.
    bad = "\n".join([
        "# HELP relq_queue_completed_per_minute Attempts per minute.",
        "# TYPE relq_queue_completed_per_minute gauge",
        'relq_queue_completed_per_minute{queue="Q"} 4.0',
        "# HELP relq_queue_attempt_duration_seconds Percentiles.",
        "# TYPE relq_queue_attempt_duration_seconds gauge",
        'relq_queue_attempt_duration_seconds{queue="Q",quantile="0.95"} 0.9',
        "# TYPE relq_queue_doneItems counter",
        'relq_queue_doneItems{queue="Q"} 1',
        "# HELP relq_wait_milliseconds Waited.",
        "# TYPE relq_wait_milliseconds histogram",
        'relq_wait_milliseconds_bucket{le="1.0"} 2',
        'relq_wait_milliseconds_bucket{le="+Inf"} 1',
        "relq_wait_milliseconds_sum 3",
        "relq_wait_milliseconds_count 2",
        "# HELP relq_items_count Items.",
        "# TYPE relq_items_count gauge",
        "relq_items_count 2",
        "",
    ])
    problems = lint(bad)
    for expected in ("relq_queue_completed_per_minute: not in base units",
                     "a quantile label on a gauge", "relq_queue_doneItems: not snake_case",
                     "relq_queue_doneItems: no help text", "relq_queue_doneItems: a counter not named _total",
                     "relq_wait_milliseconds: not in base units",
                     "relq_wait_milliseconds{}: buckets not cumulative",
                     "relq_wait_milliseconds{}: no _sum, or a _count other than +Inf's",
                     "relq_items_count: a gauge named with a counter's or histogram's suffix"):
        assert any(expected in p for p in problems), (expected, problems)


def test_the_gauges_have_a_series_per_unfinished_state_and_none_for_a_finished_one() -> None:
    family = {f.name: f for f in text_string_to_metric_families(exposition(health("Q")).decode())}
    items = {s.labels["status"]: s.value for s in family["relq_queue_items"].samples}
    assert items == {"Pending": 2, "Processing": 0, "Error": 1, "Paused": 0}
    assert "Unfinished" in family["relq_queue_items"].documentation
    # Without totals (before a scrape counted anything) no counter is given at all.
    assert set(family) == {"relq_queue_items", "relq_queue_oldest_due_seconds", "relq_queue_past_lease_items",
                           "relq_queue_paused", "relq_queue_type_limit", "relq_queue_group_limit"}


def test_the_histogram_is_cumulative_in_seconds_from_5_ms_to_5_min() -> None:
    got = samples(exposition(health("Q", "R"), some_totals()).decode())
    name = "relq_queue_attempt_duration_seconds"

    def bucket(le: str) -> float:
        return got[(f"{name}_bucket", (("le", le), ("outcome", "Completed"), ("queue", "Q")))]

    les = sorted({dict(k)["le"] for n, k in got if n == f"{name}_bucket"}, key=float)
    assert les[0] == "0.005" and les[-2] == "300.0" and les[-1] == "+Inf"
    assert [float(le) for le in les[:-1]] == [ms / 1000 for ms in BUCKETS_MS]
    assert bucket("0.005") == 2 and bucket("300.0") == 2 and bucket("+Inf") == 3
    assert got[(f"{name}_count", (("outcome", "Completed"), ("queue", "Q")))] == 3
    assert got[(f"{name}_sum", (("outcome", "Completed"), ("queue", "Q")))] == pytest.approx(400.008)
    # Every queue the health view names has its series, at 0 before it did anything.
    assert got[(f"{name}_count", (("outcome", "Failed"), ("queue", "Q")))] == 0
    assert got[(f"{name}_bucket", (("le", "+Inf"), ("outcome", "Error"), ("queue", "R")))] == 0
    assert got[("relq_queue_completed_total", (("queue", "R"),))] == 0
    assert got[("relq_queue_enqueued_total", (("queue", "Q"),))] == 7


def test_a_counter_says_that_a_restart_starts_it_again() -> None:
    for family in text_string_to_metric_families(exposition(health("Q"), some_totals()).decode()):
        if family.type in ("counter", "histogram"):
            assert "restart starts again from 0" in family.documentation
            assert "rate()" in family.documentation


# -- counting ---------------------------------------------------------------------------------


class Clock:
    """The dashboard process's clock (time.monotonic) and the server's, moved together."""

    def __init__(self, store: FakeStore) -> None:
        self.store = store
        self.s = 0.0

    def __call__(self) -> float:
        return self.s

    def tick(self, seconds: float) -> None:
        self.s += seconds
        self.store.server_now += timedelta(seconds=seconds)


@pytest.fixture
def store() -> FakeStore:
    return FakeStore.with_roles("QueueMonitor")


@pytest.fixture
def clock(store: FakeStore) -> Clock:
    return Clock(store)


def counters(clock: Clock) -> Counters:
    return Counters(window_s=WINDOW_S, clock=clock)


def attempts(c: Counters, queue: str = "SyncQueue") -> dict[str, int]:
    return c.totals().get(queue, QueueTotals()).attempts


def now(store: FakeStore, seconds: float = 0.0) -> datetime:
    return store.server_now + timedelta(seconds=seconds)


def test_the_first_scrape_counts_nothing_and_later_ones_count_each_ending_once(store, clock) -> None:
    key = store.add("SyncQueue", 1)[0]
    before = store.start("SyncQueue", key, now(store, -5))
    store.end(before, "Completed", 30)
    c = counters(clock)
    c.scrape(store)
    assert attempts(c) == {"Completed": 0, "Failed": 0, "Error": 0}

    clock.tick(10)
    first = store.start("SyncQueue", key, now(store, -3))
    store.end(first, "Error", 200)
    second = store.start("SyncQueue", key, now(store, -1))
    c.scrape(store)
    assert attempts(c) == {"Completed": 0, "Failed": 0, "Error": 1}
    clock.tick(10)
    store.end(second, "Completed", 10_000)
    c.scrape(store)
    clock.tick(10)
    c.scrape(store)
    assert attempts(c) == {"Completed": 1, "Failed": 0, "Error": 1}
    totals = c.totals()["SyncQueue"]
    assert totals.buckets["Error"][bucket_of(200)] == 1
    assert totals.buckets["Completed"][bucket_of(10_000)] == 1
    assert totals.duration_ms == {"Completed": 10_000, "Failed": 0, "Error": 200}


def test_an_attempt_that_commits_late_within_the_window_is_counted_once(store, clock) -> None:
    key = store.add("Notification", 1)[0]
    c = counters(clock)
    c.scrape(store)
    clock.tick(5)
    # Claimed and reported inside one transaction that commits 20 s after the claim.
    late = store.start("Notification", key, now(store), committed=False)
    store.end(late, "Failed", 40)
    clock.tick(15)
    c.scrape(store)
    assert attempts(c, "Notification")["Failed"] == 0
    clock.tick(5)
    store.uncommitted.clear()
    for _ in range(4):
        c.scrape(store)
        clock.tick(15)
    assert attempts(c, "Notification")["Failed"] == 1


def test_an_attempt_that_commits_later_than_the_window_is_not_counted(store, clock) -> None:
    # The stated limit: its StartedAt is behind every later read when it becomes visible.
    key = store.add("SyncQueue", 1)[0]
    c = counters(clock)
    c.scrape(store)
    late = store.start("SyncQueue", key, now(store, 1), committed=False)
    store.end(late, "Completed", 5)
    for _ in range(5):
        clock.tick(15)
        c.scrape(store)
    store.uncommitted.clear()
    clock.tick(15)
    c.scrape(store)
    assert attempts(c)["Completed"] == 0


def test_an_attempt_longer_than_the_window_is_followed_and_counted_once_when_it_ends(store, clock) -> None:
    key = store.add("SyncQueue", 1)[0]
    c = counters(clock)
    c.scrape(store)
    clock.tick(1)
    long = store.start("SyncQueue", key, now(store))
    for _ in range(20):  # ten minutes, far past the window
        clock.tick(30)
        c.scrape(store)
    assert c.followed == {long}
    assert long in store.counter_reads[-1][2]  # read again by its key, not by a window held back
    sinces = [since for since, *_ in store.counter_reads[1:]]  # moving on with every scrape, never held
    assert sinces == sorted(set(sinces)) and sinces[-1] >= now(store, -WINDOW_S - 31)
    store.end(long, "Completed", 600_000)
    clock.tick(30)
    c.scrape(store)
    assert attempts(c)["Completed"] == 1 and c.followed == set()
    assert c.totals()["SyncQueue"].buckets["Completed"][-1] == 1  # above 5 min: +Inf only
    for _ in range(3):
        clock.tick(30)
        c.scrape(store)
    assert attempts(c)["Completed"] == 1
    assert store.counter_reads[-1][2] == ()


def test_a_followed_attempt_that_is_purged_is_dropped_uncounted(store, clock) -> None:
    key = store.add("SyncQueue", 1)[0]
    c = counters(clock)
    c.scrape(store)
    clock.tick(1)
    gone = store.start("SyncQueue", key, now(store))
    clock.tick(60)
    c.scrape(store)
    assert c.followed == {gone}
    store.purge_attempt(gone)
    clock.tick(15)
    c.scrape(store)
    assert c.followed == set() and attempts(c)["Completed"] == 0


def test_an_attempt_released_or_cancelled_counts_nowhere(store, clock) -> None:
    key = store.add("SyncQueue", 1)[0]
    c = counters(clock)
    c.scrape(store)
    clock.tick(1)
    store.end(store.start("SyncQueue", key, now(store)), "Pending", 3)
    long = store.start("SyncQueue", key, now(store, 1))
    clock.tick(60)
    c.scrape(store)
    store.end(long, "Cancelled", 60_000)
    clock.tick(15)
    c.scrape(store)
    assert attempts(c) == dict.fromkeys(COUNTED, 0) and c.followed == set()


def test_an_attempt_without_a_duration_is_counted_but_not_in_the_histogram(store, clock) -> None:
    key = store.add("SyncQueue", 1)[0]
    c = counters(clock)
    c.scrape(store)
    clock.tick(1)
    store.end(store.start("SyncQueue", key, now(store)), "Error", None)  # abandoned: its worker vanished
    clock.tick(15)
    c.scrape(store)
    totals = c.totals()["SyncQueue"]
    assert totals.attempts["Error"] == 1 and sum(totals.buckets["Error"]) == 0


def test_items_are_counted_once_when_enqueued_late_commits_included(store, clock) -> None:
    store.add("SyncQueue", 3)  # before the first scrape: not counted
    c = counters(clock)
    c.scrape(store)
    store.clock = int((now(store) - T0).total_seconds())  # the fake's next keys: now on
    clock.tick(1)
    fresh = store.add("SyncQueue", 2)
    store.uncommitted.add(("SyncQueue", fresh[1]))
    clock.tick(10)
    c.scrape(store)
    assert c.totals()["SyncQueue"].enqueued == 1
    clock.tick(10)
    store.uncommitted.clear()
    c.scrape(store)
    clock.tick(40)
    c.scrape(store)
    assert c.totals()["SyncQueue"].enqueued == 2


def test_a_purge_within_the_window_never_takes_a_counter_back(store, clock) -> None:
    key = store.add("SyncQueue", 1)[0]
    c = counters(clock)
    c.scrape(store)
    clock.tick(1)
    ended = [store.start("SyncQueue", key, now(store, n)) for n in (0, 1)]
    for attempt in ended:
        store.end(attempt, "Completed", 5)
    clock.tick(5)
    c.scrape(store)
    assert attempts(c)["Completed"] == 2
    store.purge_attempt(ended[0])  # its group still has the other: its count goes down by one
    clock.tick(5)
    c.scrape(store)
    assert attempts(c)["Completed"] == 2
    store.purge_attempt(ended[1])
    clock.tick(5)
    c.scrape(store)
    assert attempts(c)["Completed"] == 2


def test_a_restart_starts_from_zero(store, clock) -> None:
    key = store.add("SyncQueue", 1)[0]
    c = counters(clock)
    c.scrape(store)
    clock.tick(1)
    store.end(store.start("SyncQueue", key, now(store)), "Completed", 5)
    clock.tick(5)
    c.scrape(store)
    assert attempts(c)["Completed"] == 1
    again = counters(clock)  # a new process: its first scrape counts what it finds from now on
    again.scrape(store)
    assert again.totals() == {}
    store.end(store.start("SyncQueue", key, now(store, 1)), "Completed", 5)
    clock.tick(5)
    again.scrape(store)
    assert attempts(again)["Completed"] == 1 and attempts(c)["Completed"] == 1


def test_a_scrape_long_after_the_one_before_starts_counting_again(store, clock) -> None:
    key = store.add("SyncQueue", 1)[0]
    c = counters(clock)
    c.scrape(store)
    clock.tick(MAX_GAP_S / 2)
    store.end(store.start("SyncQueue", key, now(store)), "Completed", 5)
    clock.tick(MAX_GAP_S)
    c.scrape(store)
    # Not read: the scrape starts from the window before now, as a first scrape does.
    assert store.counter_reads[-1][0] is None and attempts(c)["Completed"] == 0
    store.end(store.start("SyncQueue", key, now(store, 1)), "Failed", 5)
    clock.tick(5)
    c.scrape(store)
    assert attempts(c) == {"Completed": 0, "Failed": 1, "Error": 0}


def test_a_read_that_fails_changes_nothing(store, clock) -> None:
    c = counters(clock)
    c.scrape(store)
    since = store.counter_reads[-1]
    store.down = RuntimeError("gone")
    with pytest.raises(RuntimeError):
        c.scrape(store)
    store.down = None
    clock.tick(5)
    c.scrape(store)
    assert store.counter_reads[-1][0] is not None and len(store.counter_reads) == 2 and since[0] is None


@pytest.mark.parametrize("seed", range(8))
def test_every_attempt_is_counted_exactly_once_whatever_the_scrape_times(store, clock, seed: int) -> None:
    """Attempts of any length, commits up to a little less than the window late, scrapes at
    any interval up to the gap: the totals are the attempts that ended."""
    rng = random.Random(seed)
    c = counters(clock)
    c.scrape(store)
    keys = store.add("SyncQueue", 40)
    plans = []  # (starts, ends, commits, outcome, duration) in seconds from now
    for key in keys:
        start = rng.uniform(1, 400)
        length = rng.choice([rng.uniform(0, 5), rng.uniform(5, 300)])
        plans.append((key, start, start + length, start + rng.uniform(0, WINDOW_S - 1),
                      rng.choice((*COUNTED, "Pending")), int(length * 1000) if rng.random() < 0.9 else None))
    t0, started, ended = now(store), {}, {}
    while clock.s < 900:
        clock.tick(rng.uniform(0.5, 45))
        at = (now(store) - t0).total_seconds()
        for key, start, end, commit, outcome, duration in plans:
            if start <= at and key not in started:
                started[key] = store.start("SyncQueue", key, t0 + timedelta(seconds=start), committed=False)
            if key in started and commit <= at:
                store.uncommitted.discard(("SyncQueue", key, started[key].started_at))
            if end <= at and key not in ended and key in started:
                store.end(started[key], outcome, duration)
                ended[key] = (outcome, duration)
        c.scrape(store)
    clock.tick(WINDOW_S)
    c.scrape(store)
    expected = {o: sum(1 for outcome, _ in ended.values() if outcome == o) for o in COUNTED}
    assert attempts(c) == expected and sum(expected.values()) > 10
    totals = c.totals()["SyncQueue"]
    for o in COUNTED:
        durations = [d for outcome, d in ended.values() if outcome == o and d is not None]
        assert totals.duration_ms[o] == sum(durations)
        assert sum(totals.buckets[o]) == len(durations)
    assert c.followed == set()


# -- the SQL --------------------------------------------------------------------------------


def test_a_scrape_reads_each_view_once_by_its_seek_column_and_a_parameter() -> None:
    since = datetime(2026, 11, 28, 9, 0, 0, 123456)
    sql, params = counter_batch(since, 60_000)
    assert params == [60_000, since, since, since, since]
    assert sql.count("FROM dbo.QueueAttemptOutcome_V AS a") == 1
    assert sql.count("FROM dbo.QueueItemKey_V AS k") == 1
    assert "WHERE a.StartedAt >= CAST(? AS DATETIME2(7)) AND (a.Outcome IS NULL OR " in sql
    assert "WHERE k.EnqueuedAt >= CAST(? AS DATETIME2(7))" in sql
    assert "a.Outcome IN ('Completed', 'Failed', 'Error')" in sql
    # The bound goes back in whole microseconds, as Python's datetime carries it exactly.
    assert "AS DATETIME2(6))" in sql.split("IF @Bound")[0]
    thresholds = [int(n) for n in re.findall(r"WHEN a\.Duration <= (\d+) THEN", sql)]
    assert thresholds == list(BUCKETS_MS)
    assert [int(n) for n in re.findall(r"<= \d+ THEN (\d+)", sql)] == list(range(len(BUCKETS_MS)))
    assert f"ELSE {len(BUCKETS_MS)} END AS Bucket" in sql


def test_bucket_of_puts_a_duration_in_the_first_bucket_that_holds_it() -> None:
    assert [bucket_of(ms) for ms in (0, 5, 6, 1000, 300_000, 300_001)] == [0, 0, 1, 7, 14, 15]


def test_followed_attempts_are_read_by_their_start_in_a_few_sizes_of_list() -> None:
    at = datetime(2026, 11, 28, 9, 0, 0)
    keys = [AttemptKey("SyncQueue", at, at + timedelta(microseconds=n // 2)) for n in range(1200)]
    batches = followed_batches(keys)  # 600 distinct starts
    assert [len(params) for _, params in batches] == [512, 512]
    assert batches[1][1][87:] == [batches[1][1][87]] * (512 - 87)  # 88 padded with the last
    sql = batches[0][0]
    assert sql.startswith("SELECT a.[Queue], a.EnqueuedAt, a.StartedAt, a.Outcome, a.Duration "
                          "FROM dbo.QueueAttemptOutcome_V AS a "
                          "WHERE a.StartedAt IN (CAST(? AS DATETIME2(7)), ")
    assert [len(p) for _, p in followed_batches(keys[:6])] == [8]
    assert followed_batches([]) == []


class ScriptedCursor(FakeCursor):
    """A cursor that answers each execute with its own result sets, and keeps what was sent."""

    def __init__(self, *answers: list) -> None:
        super().__init__([])
        self.answers = list(answers)
        self.sent: list[tuple[str, tuple]] = []

    def execute(self, sql, *params):
        self.sent.append((sql, params))
        self.sets = list(self.answers.pop(0))


def test_the_store_reads_a_scrape_into_its_figures() -> None:
    since = datetime(2026, 11, 28, 9, 0, 0)
    bound = since + timedelta(seconds=15)
    running = (since + timedelta(seconds=1), since + timedelta(seconds=2))
    cursor = ScriptedCursor([
        (["Bound"], [(bound,)]),
        (["Queue", "Outcome", "Bucket", "LeavingEnqueuedAt", "LeavingStartedAt", "Attempts",
          "AttemptsPastBound", "DurationMs", "DurationMsPastBound"],
         [("SyncQueue", "Completed", 3, None, None, 4, 1, 160, 40),
          ("SyncQueue", "Error", None, None, None, 2, 2, 0, 0),
          ("SyncQueue", None, None, *running, 1, 0, 0, 0),
          ("SyncQueue", None, None, None, None, 5, 5, 0, 0)]),
        (["Queue", "Items", "ItemsPastBound"], [("Notification", 9, 3)]),
    ], [(["Queue", "EnqueuedAt", "StartedAt", "Outcome", "Duration"],
         [("SyncQueue", *running, "Failed", 70)])])
    reading = SqlStore(lambda: FakeConnection(cursor)).counter_reading(
        since, 60_000, [AttemptKey("SyncQueue", *running)])
    assert reading.since == since and reading.bound == bound
    assert [(e.outcome, e.bucket, e.attempts, e.attempts_past_bound, e.duration_ms, e.duration_ms_past_bound)
            for e in reading.ended] == [("Completed", 3, 4, 1, 160, 40), ("Error", None, 2, 2, 0, 0)]
    assert reading.leaving == [AttemptKey("SyncQueue", *running)]
    assert reading.enqueued == {"Notification": (9, 3)}
    assert [(r.key, r.outcome, r.duration_ms) for r in reading.followed] == [
        (AttemptKey("SyncQueue", *running), "Failed", 70)]
    (batch, params), (followed, asked) = cursor.sent
    assert "FROM dbo.QueueItemKey_V" in batch
    assert params[1:] == (since.isoformat(timespec="microseconds"),) * 4
    assert "IN (CAST(? AS DATETIME2(7))" in followed and len(asked) == 8


def test_the_first_read_asks_the_server_where_its_window_starts() -> None:
    since = datetime(2026, 11, 28, 9, 0, 0, 5)
    cursor = ScriptedCursor([(["Since"], [(since,)])], [
        (["Bound"], [(since,)]), (["Queue", "Outcome"], []), (["Queue", "Items", "ItemsPastBound"], [])])
    reading = SqlStore(lambda: FakeConnection(cursor)).counter_reading(None, 60_000, [])
    (first, window), (_, params) = cursor.sent
    assert "DATEADD(MILLISECOND, -CAST(? AS INT), SYSUTCDATETIME()) AS DATETIME2(6)" in first
    assert window == (60_000,)
    assert params == (60_000, *(since.isoformat(timespec="microseconds"),) * 4)
    assert reading.since == since and reading.ended == [] and reading.enqueued == {}


# -- the route ------------------------------------------------------------------------------


def client(store: FakeStore) -> TestClient:
    return TestClient(create_app(store, Settings(csrf="x")), follow_redirects=False)


def test_metrics_count_what_happened_between_two_scrapes(store: FakeStore) -> None:
    key = store.add("SyncQueue", 1)[0]
    store.add("SyncQueue", 1, "Failed")
    app = client(store)
    first = samples(app.get("/metrics").text)
    assert first[("relq_queue_completed_total", (("queue", "SyncQueue"),))] == 0
    assert first[("relq_queue_items", (("queue", "SyncQueue"), ("status", "Pending")))] == 1
    # No series for a finished state, not even a zero: QueueHealth_V does not count them.
    states = {dict(labels)["status"] for name, labels in first if name == "relq_queue_items"}
    assert states == {"Pending", "Processing", "Error", "Paused"}
    assert first[("relq_queue_oldest_due_seconds", (("queue", "SyncQueue"),))] == 3600 - 1
    assert first[("relq_queue_oldest_due_seconds", (("queue", "Notification"),))] == 0
    assert first[("relq_queue_past_lease_items", (("queue", "SyncQueue"),))] == 0
    store.server_now += timedelta(seconds=10)
    store.end(store.start("SyncQueue", key, now(store, -2)), "Completed", 1500)
    store.end(store.start("SyncQueue", key, now(store, -1)), "Error", 20)
    response = app.get("/metrics")
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/plain")
    assert lint(response.text) == []
    second = samples(response.text)
    assert second[("relq_queue_completed_total", (("queue", "SyncQueue"),))] == 1
    assert second[("relq_queue_retried_total", (("queue", "SyncQueue"),))] == 1
    assert second[("relq_queue_failed_total", (("queue", "Notification"),))] == 0
    bucket = ("relq_queue_attempt_duration_seconds_bucket", (("le", "2.5"), ("outcome", "Completed"),
                                                             ("queue", "SyncQueue")))
    assert second[bucket] == 1
    assert samples(app.get("/metrics").text)[("relq_queue_completed_total", (("queue", "SyncQueue"),))] == 1


def test_metrics_need_the_counters_views_of_queue_monitor() -> None:
    store = FakeStore.with_roles()
    store.granted |= {("dbo.QueueHealth_V", "SELECT"), ("dbo.QueueThroughput_V", "SELECT"),
                      ("dbo.QueueControl_V", "SELECT")}
    response = client(store).get("/metrics")
    assert response.status_code == 403 and response.text.count("\n") == 1
    assert "QueueMonitor" in response.text
    assert "lacks dbo.QueueAttemptOutcome_V, dbo.QueueItemKey_V" in response.text
    assert client(store).get("/").status_code == 200  # the overview reads no counter


def test_metrics_when_the_counters_cannot_be_read_say_so_in_one_line(store: FakeStore, monkeypatch) -> None:
    def gone(*_: object) -> None:
        raise db.SqlError([db.ServerMessage(229, "The SELECT permission was denied", "42000")])

    monkeypatch.setattr(store, "counter_reading", gone)
    response = client(store).get("/metrics")
    assert response.status_code == 503 and response.text.count("\n") == 1
    assert "SELECT permission was denied" in response.text
