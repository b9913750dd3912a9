"""The harness's offline parts: the command line, the settings, the backlog's chunks,
and the SQL it sends (parsed with sqlfluff's T-SQL grammar, since no server is here)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from sqlfluff.core import FluffConfig, Linter

from bench import backlog, cli, counters, scenarios, workers
from bench.cli import NO_SERVER, main
from bench.report import Report
from bench.scenarios import Runner, Settings
from relq import db
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


def test_the_server_can_come_from_conn(capsys: pytest.CaptureFixture[str]) -> None:
    conn = "DRIVER={No Such Driver};SERVER=nowhere;UID=u;PWD=secret"
    assert main(["--conn", conn, "--scenarios", "nope"], environ={}) == 2
    err = capsys.readouterr().err
    # past the server: --conn named one
    assert err.splitlines()[-1] == f"bench: --scenarios: nope is not a scenario {THERE_ARE}"
    assert "secret" not in err


def test_an_unknown_scenario_is_refused_before_anything_connects(capsys: pytest.CaptureFixture[str]) -> None:
    environ = {"RELQ_MSSQL": "DRIVER={No Such Driver};SERVER=nowhere;UID=u;PWD=secret"}
    assert main(["--scenarios", "workers,nope"], environ=environ) == 2
    err = capsys.readouterr().err
    assert err.splitlines() == [f"bench: --scenarios: nope is not a scenario {THERE_ARE}"]
    assert "secret" not in err


THERE_ARE = ("(there are plans, backlog, workers, batch, purge, queues, claimcost, healthcost, idle, "
             "producers, transportpurge)")
ENVIRON = {"RELQ_MSSQL": "DRIVER={No Such Driver};SERVER=nowhere;UID=u;PWD=secret"}


@pytest.mark.parametrize("argv, line", [
    # only the broken option, in one line, before the line naming the server
    (["--seconds", "-1"], "bench: --seconds must be more than 0, not -1"),
    (["--seconds", "-1", "--batch", "0"],
     "bench: --seconds must be more than 0, not -1; --batch must be 1 to 1000, not 0"),
    (["--warmup", "-0.5"], "bench: --warmup must be 0 or more, not -0.5"),
    (["--seconds", "abc"], "bench: argument --seconds: invalid float value: 'abc'"),
    (["--nope", "3"], "bench: unrecognized arguments: --nope 3"),
    (["--scenarios", ","], f"bench: --scenarios names none {THERE_ARE}"),
    (["--scenarios", "workers,a,b"], f"bench: --scenarios: a, b are not scenarios {THERE_ARE}"),
])
def test_a_bad_option_is_refused_in_one_line_naming_it(capsys: pytest.CaptureFixture[str], argv: list[str],
                                                        line: str) -> None:
    try:
        code = main(argv, environ=ENVIRON)
    except SystemExit as exited:  # argparse's refusals (python -m bench exits with it alike)
        code = exited.code
    assert code == 2
    captured = capsys.readouterr()
    assert captured.err.splitlines() == [line]
    assert captured.out == ""


@pytest.mark.parametrize("settings, message", [
    (Settings(seconds=0), "--seconds must be more than 0, not 0"),
    (Settings(seconds=float("nan")), "--seconds must be more than 0, not nan"),
    (Settings(workers=0), "--workers must be at least 1, not 0"),
    (Settings(batch=1001), "--batch must be 1 to 1000, not 1001"),
    (Settings(backlog=0), "--backlog must be at least 1, not 0"),
    (Settings(purge_items=-3), "--purge-items must be at least 1, not -3"),
    (Settings(small_backlog=10, large_backlog=5),
     "--large-backlog must be at least --small-backlog (10), not 5"),
    (Settings(small_backlog=0, large_backlog=0),
     "--small-backlog must be at least 1, not 0; --large-backlog must be at least 1, not 0"),
    (Settings(plan_backlog=5_000), "--plan-backlog must be at least 10000 at --batch 100, not 5000"),
    (Settings(batch=1000, plan_backlog=20_000),
     "--plan-backlog must be at least 20320 at --batch 1000, not 20000"),
    (Settings(batch=0, plan_backlog=0), "--batch must be 1 to 1000, not 0"),  # the limit follows --batch
    (Settings(warmup=-1), "--warmup must be 0 or more, not -1"),
])
def test_settings_no_run_can_use_are_refused_naming_only_the_broken_options(settings: Settings,
                                                                             message: str) -> None:
    with pytest.raises(RelqError) as refused:
        settings.check()
    assert str(refused.value) == f"bench: {message}"


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


def test_the_workers_scenario_measures_a_curve_from_1_to_n_workers() -> None:
    assert Settings(workers=8).worker_counts == [1, 2, 4, 8]
    assert Settings(workers=12).worker_counts == [1, 2, 4, 8, 12]
    assert Settings(workers=2).worker_counts == [1, 2]
    assert Settings(workers=1).worker_counts == [1]


def test_the_report_carries_the_limit_the_plans_were_held_to() -> None:
    shown = Settings(batch=985).as_dict()
    assert shown["scan_limit"] == 2002 and shown["batch"] == 985 and shown["worker_counts"] == [1, 2, 4, 8]


@pytest.mark.parametrize("raised, code, line", [
    (KeyboardInterrupt(), 130, "bench: interrupted"),
    (OSError(28, "No space left on device"), 1, "bench: OSError: [Errno 28] No space left on device"),
    (ValueError("a percentile is 0 to 100,\nnot 101"), 1,
     "bench: ValueError: a percentile is 0 to 100, not 101"),
    (RelqError("cannot reach SQL Server"), 2, "bench: cannot reach SQL Server"),
])
def test_whatever_stops_a_run_ends_in_one_line(monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str], raised: BaseException,
                                               code: int, line: str) -> None:
    def stopped(*args: object, **kwargs: object) -> None:
        raise raised

    monkeypatch.setattr(cli, "run", stopped)
    assert main(["--scenarios", "workers"], environ=ENVIRON) == code
    err = capsys.readouterr().err
    assert err.splitlines()[-1] == line
    assert "Traceback" not in err and "secret" not in err


class ScenarioRunner(Runner):
    """A Runner whose database is a name and whose scenarios fail as the test says."""

    def __init__(self, failure: BaseException) -> None:
        super().__init__(db.Target("DRIVER=x", "RELQ_MSSQL"), Settings())
        self.failure = failure

    @contextmanager
    def _database(self) -> Iterator[str]:
        yield "DRIVER=x;DATABASE=relq_bench_test"

    def _workers(self, conn_str: str) -> None:  # type: ignore[override]
        raise self.failure


def test_a_value_error_in_a_scenario_is_that_scenarios_problem() -> None:
    report = Report(started_at="now", settings={}, client={})
    ScenarioRunner(ValueError("not a table name: 'x y'")).scenario(report, "workers")
    assert report.problems == ["workers: ValueError: not a table name: 'x y'"]
    assert not report.ok


def test_ctrl_c_in_a_scenario_stops_the_run() -> None:
    report = Report(started_at="now", settings={}, client={})
    with pytest.raises(KeyboardInterrupt):
        ScenarioRunner(KeyboardInterrupt()).scenario(report, "workers")


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
    "batch report": workers.batch_report_sql("SyncQueue"),
    "Notification batch report": workers.batch_report_sql("Notification"),
    "presize": scenarios.PRESIZE,
    "statistics": scenarios.statistics_sql(["SyncQueue", "SyncQueueAttempt"]),
    "truncate": scenarios.truncate_sql(["HeapQueue"]),
    "processing left": workers.PROCESSING,
    "completed since": workers.COMPLETED_SINCE,
    "counters": counters.SNAPSHOT,
    "product": counters.PRODUCT,
    "machine": counters.MACHINE,
    "Next_ procedures": scenarios.NEXT_PROCEDURES,
    "has @BatchSize": scenarios.HAS_BATCH_SIZE,
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


def _split(text: str) -> list[str]:
    """``text`` cut at its top-level commas (not those inside parentheses or quotes)."""
    parts, depth, quoted, start = [], 0, False, 0
    for at, char in enumerate(text):
        if char == "'":
            quoted = not quoted
        elif not quoted and char == "(":
            depth += 1
        elif not quoted and char == ")":
            depth -= 1
        elif not quoted and depth == 0 and char == ",":
            parts.append(text[start:at].strip())
            start = at + 1
    return [*parts, text[start:].strip()]


def _insert(sql: str, table: str) -> dict[str, str]:
    """Column -> the expression the INSERT INTO dbo.<table> (...) SELECT ... FROM of ``sql`` writes."""
    found = re.search(rf"INSERT INTO dbo\.{table} \((.*?)\)\s*SELECT(.*?)\sFROM\s", sql, re.S)
    assert found is not None, f"no INSERT INTO dbo.{table} ... SELECT"
    columns = [c.strip("[] \n") for c in _split(found.group(1))]
    values = _split(found.group(2))
    assert len(columns) == len(values)
    return dict(zip(columns, values, strict=True))


def _table_columns(path: str) -> tuple[list[str], set[str]]:
    """The columns of the CREATE TABLE in ``path``, and those a row must be given (neither
    NULL nor with a default)."""
    text = (REPO / path).read_text(encoding="utf-8-sig")
    body = text[text.index("CREATE TABLE"):text.index("CONSTRAINT PK_")]
    columns, required = [], set()
    for name, rest in re.findall(r"^\s+(\[?\w+\]?) ((?:dbo\.\S+|[A-Z]+\b).*?),?$", body, re.M):
        columns.append(name.strip("[]"))
        if not re.search(r"\bNULL\b|\bDEFAULT\b", rest):
            required.add(name.strip("[]"))
    return columns, required


def _meaning(expression: str) -> str:
    """What an Add_ or loader expression writes: the item's key, a value the item gives, or a literal."""
    expression = re.sub(r"\s+AS\s+\[?\w+\]?$", "", expression.strip())
    default = re.fullmatch(r"ISNULL\(i\.\[?\w+\]?, (.*)\)", expression)  # the item's value, or this
    if default:
        expression = default.group(1)
    if expression in ("p.EnqueuedAt", "k.EnqueuedAt"):
        return "the key"
    if expression == "@BatchID":  # the call's batch; Add_'s @BatchID is NULL by default: none
        return "NULL"
    return "given by the item" if re.fullmatch(r"i\.\[?\w+\]?", expression) else expression


ADD = (REPO / "database/procedures/dbo.Add_SyncQueue_utx.sql").read_text(encoding="utf-8-sig")


def test_the_loader_inserts_the_columns_add_inserts_with_adds_defaults() -> None:
    """An item that gives only its Type and EntityKey, written as dbo.Add_SyncQueue_utx writes it."""
    added, loaded = _insert(ADD, "SyncQueue"), _insert(backlog.SYNC_QUEUE, "SyncQueue")
    assert list(loaded) == list(added)
    for column, expression in added.items():
        if _meaning(expression) != "given by the item":
            assert _meaning(loaded[column]) == _meaning(expression), column
    keyed = {c for c, e in added.items() if _meaning(e) == "the key"}
    assert keyed == {"EnqueuedAt", "ScheduledFor", "UpdatedAt"}
    assert _meaning(loaded["GroupKey"]) == _meaning(loaded["DedupKey"]) == "NULL"


@pytest.mark.parametrize("name", ["SyncQueue backlog", "finished SyncQueue items"])
def test_every_loader_writes_columns_of_the_table_and_every_required_one(name: str) -> None:
    columns, required = _table_columns("database/tables/dbo.SyncQueue.sql")
    assert {"EnqueuedAt", "Type", "EntityKey", "ScheduledFor", "UpdatedAt"} <= required  # the parse works
    written = set(_insert(SQL[name], "SyncQueue"))
    assert written <= set(columns)
    assert required <= written


def _applock(sql: str) -> dict[str, str]:
    call = re.search(r"sp_getapplock(.*?);", sql, re.S)
    assert call is not None
    return dict(re.findall(r"@(Resource|LockMode|LockOwner) = (N?'[^']*')", call.group(1)))


def test_the_loaders_take_adds_key_scheme_and_a_lock_of_their_own() -> None:
    # Add_ takes its keys with no lock (above the last key, committed or not, trying again when
    # another producer took them); the loaders, which write thousands of rows a statement, take
    # them under one application lock of the queue's name, so two loaders never share keys.
    assert "sp_getapplock" not in ADD
    for name in ("SyncQueue backlog", "finished SyncQueue items"):
        loader = _applock(SQL[name])
        assert (loader["Resource"], loader["LockMode"]) == ("N'dbo.SyncQueue'", "'Exclusive'"), name
    assert "dbo.QueueNextKey_fn(" in ADD and "dbo.QueueNextKey_fn(" in backlog.SYNC_QUEUE
