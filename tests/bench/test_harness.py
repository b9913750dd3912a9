"""The harness's offline parts: the command line, the settings, the backlog's chunks,
and the SQL it sends (parsed with sqlfluff's T-SQL grammar, since no server is here)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from sqlfluff.core import FluffConfig, Linter

from bench import backlog, counters, scenarios, workers
from bench.cli import NO_SERVER, main
from bench.scenarios import Settings
from relq.errors import RelqError
from tests.conftest import REPO


def test_without_relq_mssql_the_cli_says_so_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([], environ={}) == 2
    captured = capsys.readouterr()
    assert captured.err == NO_SERVER + "\n"
    assert captured.out == ""


def test_python_m_bench_without_relq_mssql_exits_non_zero_with_one_line() -> None:
    env = {k: v for k, v in os.environ.items() if k != "RELQ_MSSQL"}
    done = subprocess.run([sys.executable, "-m", "bench"], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [NO_SERVER]


def test_an_unknown_scenario_is_refused_before_anything_connects(capsys: pytest.CaptureFixture[str]) -> None:
    environ = {"RELQ_MSSQL": "DRIVER={No Such Driver};SERVER=nowhere;UID=u;PWD=secret"}
    assert main(["--scenarios", "workers,nope"], environ=environ) == 2
    err = capsys.readouterr().err
    assert err.splitlines()[-1] == ("bench: no scenario nope "
                                    "(there are plans, backlog, workers, batch, purge, queues)")
    assert "secret" not in err


@pytest.mark.parametrize("settings, fragment", [
    (Settings(seconds=0), "--seconds"),
    (Settings(batch=1001), "--batch"),
    (Settings(small_backlog=10, large_backlog=5), "the large one"),
    (Settings(plan_backlog=5_000), "--plan-backlog"),
])
def test_settings_no_run_can_use_are_refused(settings: Settings, fragment: str) -> None:
    with pytest.raises(RelqError, match=fragment):
        settings.check()


def test_the_defaults_are_the_issues_scenarios() -> None:
    s = Settings()
    Settings().check()
    assert (s.small_backlog, s.large_backlog, s.workers, s.batch) == (1_000, 1_000_000, 8, 100)


def test_a_backlog_loads_in_chunks() -> None:
    assert list(backlog.chunks(120_000, 50_000)) == [50_000, 50_000, 20_000]
    assert list(backlog.chunks(100_000, 50_000)) == [50_000, 50_000]
    assert list(backlog.chunks(0, 50_000)) == []
    assert sum(backlog.chunks(1_000_000, backlog.LOAD_CHUNK)) == 1_000_000
    with pytest.raises(ValueError):
        list(backlog.chunks(10, 0))


def test_the_feeder_stays_below_lock_escalation() -> None:
    assert backlog.FEED_CHUNK < 5_000


def test_every_message_queue_has_a_loader_and_nothing_else_does() -> None:
    assert all("INSERT INTO dbo." + kind in backlog.message_sql(kind) for kind in backlog.MESSAGE_QUEUES)
    with pytest.raises(ValueError, match="not a message queue"):
        backlog.message_sql("StrictFifoQueue")
    assert backlog.queue_sql("SyncQueue") is backlog.SYNC_QUEUE


def test_any_job_queue_loads_as_syncqueue_does() -> None:
    sql = backlog.job_queue_sql("OrderQueue")
    assert "INSERT INTO dbo.OrderQueue (" in sql and "FROM dbo.OrderQueueType AS t" in sql
    assert "@Resource = N'dbo.OrderQueue'" in sql and "SyncQueue" not in sql
    with pytest.raises(ValueError):
        backlog.job_queue_sql("x; DROP TABLE y")


def test_a_procedure_name_gives_its_queue() -> None:
    assert scenarios._queue_of("Next_SyncQueue_Batch_trx") == "SyncQueue"
    assert scenarios._queue_of("Next_Notification_trx") == "Notification"


SQL = {
    "SyncQueue backlog": backlog.SYNC_QUEUE,
    "finished SyncQueue items": backlog.FINISHED_SYNC_QUEUE,
    "Notification backlog": backlog.NOTIFICATION,
    **{f"{kind} messages": backlog.message_sql(kind) for kind in backlog.MESSAGE_QUEUES},
    "batch report": workers.BATCH_REPORT,
    "processing left": workers.PROCESSING,
    "completed since": workers.COMPLETED_SINCE,
    "counters": counters.SNAPSHOT,
    "product": counters.PRODUCT,
    "machine": counters.MACHINE,
    "Next_ procedures": scenarios.NEXT_PROCEDURES,
    "has @BatchSize": scenarios.HAS_BATCH_SIZE,
    "is a job queue": scenarios.IS_JOB_QUEUE,
    "another job queue": backlog.job_queue_sql("OrderQueue"),
    "filtered indexes": scenarios.FILTERED_INDEXES,
}


@pytest.mark.parametrize("name", sorted(SQL))
def test_the_sql_the_harness_sends_parses_as_t_sql(name: str) -> None:
    linter = Linter(config=FluffConfig(overrides={"dialect": "tsql"}))
    parsed = linter.parse_string(SQL[name].replace("?", "@p"))
    assert parsed.tree is not None
    assert [u.raw for u in parsed.tree.recursive_crawl("unparsable")] == []
    assert [v.desc() for v in parsed.violations] == []


def test_the_loaders_write_rows_as_add_would() -> None:
    """The columns dbo.Add_SyncQueue_utx sets, its enqueue lock and its key scheme."""
    sql = backlog.SYNC_QUEUE
    assert "@Resource = N'dbo.SyncQueue', @LockMode = 'Exclusive', @LockOwner = 'Transaction'" in sql
    assert "dbo.QueueNextKey_fn(MAX(q.EnqueuedAt))" in sql
    columns = "EnqueuedAt, [Type], EntityKey, Payload, ScheduledFor, UpdatedAt, [Priority], GroupKey, "
    assert columns + "DedupKey" in sql
    assert "k.EnqueuedAt, k.EnqueuedAt, 0, NULL, NULL" in sql  # ScheduledFor and UpdatedAt are the key
