"""tasks.py: the commands' own behaviour, offline (the package's logic has its own tests)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from invoke import Config, MockContext, Result

import tasks
from tests.conftest import REPO


def test_invoke_test_names_its_phases_and_runs_them_in_order(monkeypatch, capsys) -> None:
    ran: list[str] = []
    monkeypatch.setattr(tasks, "lint", lambda c: ran.append("lint"))
    monkeypatch.setattr(tasks, "build", lambda c: ran.append("build"))
    monkeypatch.delenv("RELQ_MSSQL", raising=False)
    c = MockContext(run=Result())
    tasks.test(c)
    c.run.assert_called_once_with(f"{sys.executable} -m pytest", pty=False)
    assert ran == ["lint", "build"]
    phases = [line for line in capsys.readouterr().err.splitlines() if line.startswith("test: ")]
    assert phases == ["test: 1/3 lint (sqlfluff, ruff)", "test: 2/3 build", "test: 3/3 pytest"]


def test_invoke_test_stops_at_the_first_failed_phase(monkeypatch, capsys) -> None:
    def failed_lint(c) -> None:
        raise tasks.Exit(code=1)

    monkeypatch.setattr(tasks, "lint", failed_lint)
    monkeypatch.setattr(tasks, "build", lambda c: pytest.fail("build ran after a failed lint"))
    c = MockContext(run=Result())
    with pytest.raises(tasks.Exit):
        tasks.test(c)
    assert not c.run.called


@pytest.mark.parametrize("task, kwargs, line", [
    (tasks.status, {"watch": "abc"}, "status: --watch must be a whole number, not 'abc'"),
    (tasks.worker, {"queue": "SyncQueue", "grace": "abc"},
     "worker: --grace must be a whole number, not 'abc'"),
    (tasks.worker, {"queue": "SyncQueue", "concurrency": "abc"},
     "worker: --concurrency must be a whole number, not 'abc'"),
    (tasks.worker, {"queue": "SyncQueue", "wait_ms": "1.5"},
     "worker: --wait-ms must be a whole number, not '1.5'"),
    (tasks.bench, {"seconds": "abc"}, "bench: --seconds must be a whole number, not 'abc'"),
    (tasks.bench, {"warmup": "inf"}, "bench: --warmup must be a whole number, not 'inf'"),
    (tasks.deploy, {"deploy_wait": "ten"}, "deploy: --deploy-wait must be a whole number, not 'ten'"),
    (tasks.deploy, {"statement_lock_wait": "5s"},
     "deploy: --statement-lock-wait must be a whole number, not '5s'"),
    (tasks.deploy, {"statement_lock_wait": -1},
     "deploy: --statement-lock-wait must be 0 or more seconds, not -1"),
    (tasks.pipeline_enqueue, {"input": "x", "partitions": "many"},
     "pipeline.enqueue: --partitions must be a whole number, not 'many'"),
    (tasks.pipeline_archive, {"older_than_minutes": "an hour"},
     "pipeline.archive: --older-than-minutes must be a whole number, not 'an hour'"),
])
def test_a_bad_number_is_one_line_before_anything_runs(task, kwargs, line) -> None:
    c = MockContext()  # any command it ran would fail: none may run
    with pytest.raises(tasks.Exit) as info:
        task(c, **kwargs)
    assert (info.value.message, info.value.code) == (line, 2)


def test_numbers_reach_the_worker_as_numbers(monkeypatch) -> None:
    seen: list[list[str]] = []
    monkeypatch.setattr("relq.worker.cli.main", lambda argv, **kw: seen.append(argv) or 0)
    tasks.worker(MockContext(), "SyncQueue", concurrency="4", grace="2")
    assert seen == [["--queue", "SyncQueue", "--concurrency", "4", "--grace", "2"]]


NONE_CONFIGURED = ("no SQL Server configured: set RELQ_MSSQL to an ODBC connection string, pass --conn, "
                   "or set relq.mssql in invoke.yaml")


def invoke(*argv: str, **env: str) -> subprocess.CompletedProcess:
    """``invoke`` as a user runs it, without RELQ_MSSQL unless ``env`` sets it."""
    environ = {k: v for k, v in os.environ.items() if k != "RELQ_MSSQL"} | env
    return subprocess.run([sys.executable, "-m", "invoke", *argv], cwd=REPO, capture_output=True, text=True,
                          timeout=120, env=environ)


@pytest.mark.parametrize("argv, line", [
    (["status", "--watch", "abc"], "status: --watch must be a whole number, not 'abc'"),
    (["worker", "--queue", "SyncQueue", "--grace", "abc"],
     "worker: --grace must be a whole number, not 'abc'"),
    (["worker", "-c", "SERVER=h", "--concurrency", "1.5"],
     "worker: --concurrency must be a whole number, not '1.5'"),
    (["worker"], "worker: --queue is required: the queue to work on, e.g. --queue Notification "
                 "(invoke worker --help)"),
    (["new-queue", "--types", "Pdf"], "new-queue: --name is required: the queue's name, e.g. --name "
                                      "InvoiceExport (invoke new-queue --help)"),
    (["dashboard", "--port", "x"], "dashboard: --port must be a whole number, not 'x'"),
    (["dashboard", "--port", "0"], "dashboard: --port must be 1-65535, not 0"),
    (["deploy", "--deploy-wait", "ten"], "deploy: --deploy-wait must be a whole number, not 'ten'"),
    (["deploy", "--statement-lock-wait", "2.5"],
     "deploy: --statement-lock-wait must be a whole number, not '2.5'"),
    (["bench", "--seconds", "1e9999"], "bench: --seconds must be a whole number, not '1e9999'"),
    (["pipeline.demo", "--rows", "many"], "pipeline.demo: --rows must be a whole number, not 'many'"),
    (["test", "--pytest", "-k 'unclosed"], "test: --pytest \"-k 'unclosed\": No closing quotation"),
])
def test_invoke_itself_prints_the_one_line_and_no_traceback(argv, line) -> None:
    done = invoke(*argv)
    assert (done.returncode, done.stderr.strip().splitlines(), done.stdout) == (2, [line], "")


@pytest.mark.parametrize("argv, line", [
    (["status"], "status: " + NONE_CONFIGURED),
    (["deploy", "--check"], "deploy: " + NONE_CONFIGURED),
    (["register-messages"], "register-messages: " + NONE_CONFIGURED),
])
def test_a_task_without_a_server_says_so_in_one_line(argv, line) -> None:
    done = invoke(*argv)
    assert (done.returncode, done.stderr.strip().splitlines(), done.stdout) == (1, [line], "")


def test_dash_h_is_help_for_every_task_and_dash_c_is_the_connection_wherever_there_is_one() -> None:
    for name in tasks.ns.task_names:
        task = tasks.ns[name]
        flags = {n for argument in task.get_arguments() for n in argument.names}
        assert "h" not in flags, f"{name}: -h must be help"
        assert {n for n in flags if len(n) == 1} <= {"c"}, f"{name}: short flags {sorted(flags)}"
        assert ("conn" in flags) == ("c" in flags), name
    done = invoke("deploy", "-h", RELQ_MSSQL="DRIVER={nope};SERVER=unreachable")
    assert done.returncode == 0 and done.stdout.startswith("Usage: inv[oke] [--core-opts] deploy")
    assert "--deploy-wait=INT" in done.stdout and "--statement-lock-wait=INT" in done.stdout
    assert "-c STRING, --conn=STRING" in done.stdout
    assert done.stderr == ""  # nothing ran: no preflight, no connection


def test_invoke_test_passes_its_pytest_arguments_on(monkeypatch) -> None:
    monkeypatch.setattr(tasks, "lint", lambda c: None)
    monkeypatch.setattr(tasks, "build", lambda c: None)
    monkeypatch.delenv("RELQ_MSSQL", raising=False)
    c = MockContext(run=Result())
    tasks.test(c, pytest="-k 'deploy and not live' -x")
    c.run.assert_called_once_with(f"{sys.executable} -m pytest -k 'deploy and not live' -x", pty=False)


def test_bench_test_without_a_server_fails_in_one_line_instead_of_passing_on_skips(monkeypatch) -> None:
    monkeypatch.delenv("RELQ_MSSQL", raising=False)
    c = MockContext(run=Result())
    with pytest.raises(tasks.Exit) as info:
        tasks.bench(c, test=True)
    assert info.value.code == 2
    assert info.value.message.startswith("bench: no SQL Server configured: set RELQ_MSSQL to an ODBC "
                                         "connection string, pass --conn, or set relq.mssql in invoke.yaml")
    assert not c.run.called


@pytest.mark.parametrize("environ, conn, yaml, expected", [
    ({}, None, "SERVER=yaml;PWD=y", "SERVER=yaml;PWD=y"),
    ({}, "SERVER=cli;PWD=c", "SERVER=yaml;PWD=y", "SERVER=cli;PWD=c"),
    ({"RELQ_MSSQL": "SERVER=env;PWD=e"}, "SERVER=cli;PWD=c", "SERVER=yaml;PWD=y", "SERVER=cli;PWD=c"),
    ({"RELQ_MSSQL": "SERVER=env;PWD=e"}, None, "SERVER=yaml;PWD=y", "SERVER=env;PWD=e"),
])
@pytest.mark.parametrize("test", [False, True])
def test_bench_finds_its_server_like_every_task_and_hands_it_over_in_the_environment(
        monkeypatch, environ, conn, yaml, expected, test) -> None:
    monkeypatch.delenv("RELQ_MSSQL", raising=False)
    for key, value in environ.items():
        monkeypatch.setenv(key, value)
    c = MockContext(config=Config(overrides={"relq": {"mssql": yaml}} if yaml else {}), run=Result())
    tasks.bench(c, conn=conn, test=test, seconds="2")
    command, kwargs = c.run.call_args.args[0], c.run.call_args.kwargs
    assert kwargs["env"]["RELQ_MSSQL"] == expected
    assert "PWD" not in command  # the arguments of a process are anyone's to read
    if test:
        assert kwargs["env"]["RELQ_BENCH"] == "1" and command.endswith("-m pytest -m bench tests/bench")
    else:
        assert "-m bench --out " in command and "--seconds 2" in command


def test_bench_hands_every_option_to_python_m_bench_which_takes_them_all(monkeypatch) -> None:
    """invoke bench and python -m bench take the same options: what the task forwards, the
    bench's own parser reads back as given."""
    import shlex

    from bench.cli import parser
    monkeypatch.setenv("RELQ_MSSQL", "SERVER=env;PWD=e")
    c = MockContext(config=Config(), run=Result())
    given = {"seconds": 3, "workers": 4, "batch": 50, "backlog": 500, "small_backlog": 100,
             "large_backlog": 20000, "purge_items": 900, "plan_backlog": 10000, "warmup": 2,
             "idle_seconds": 5, "producers": 2}
    tasks.bench(c, scenarios="idle,producers", consumers="1,4", **{k: str(v) for k, v in given.items()})
    argv = shlex.split(c.run.call_args.args[0])
    parsed = parser().parse_args(argv[argv.index("bench") + 1:])
    assert {k: getattr(parsed, k) for k in given} == given
    assert (parsed.scenarios, list(parsed.consumers)) == ("idle,producers", [1, 4])


@pytest.mark.parametrize("name, call", [
    ("deploy", lambda c: tasks.deploy(c)),
    ("register-messages", lambda c: tasks.register_messages(c)),
    ("status", lambda c: tasks.status(c)),
    ("tsqlt.install", lambda c: tasks.tsqlt_install(c)),
    ("worker", lambda c: tasks.worker(c, "SyncQueue")),
    ("pipeline.enqueue", lambda c: tasks.pipeline_enqueue(c, "items.parquet", rejects="rejects")),
    ("pipeline.archive", lambda c: tasks.pipeline_archive(c, "60", archive="archive")),
    ("bench", lambda c: tasks.bench(c)),
])
def test_every_task_prefixes_its_one_error_line_with_its_own_name(monkeypatch, capsys, name, call) -> None:
    monkeypatch.delenv("RELQ_MSSQL", raising=False)
    with pytest.raises(tasks.Exit) as info:
        call(MockContext())
    lines = [info.value.message] if info.value.message else capsys.readouterr().err.strip().splitlines()
    assert info.value.code != 0
    assert lines == [f"{name}: no SQL Server configured: set RELQ_MSSQL to an ODBC connection string, "
                     f"pass --conn, or set relq.mssql in invoke.yaml"]


def test_a_partition_count_of_zero_reaches_the_pipeline_which_refuses_it(monkeypatch) -> None:
    seen: list[list[str]] = []
    monkeypatch.setattr(tasks, "_pipeline", lambda c, argv, conn: seen.append(argv))
    tasks.pipeline_enqueue(MockContext(), input="x", partitions="0")
    tasks.pipeline_archive(MockContext(), older_than_minutes="60", partitions="0")
    assert all(argv[argv.index("--partitions") + 1] == "0" for argv in seen) and len(seen) == 2


def test_the_pipeline_tasks_pass_remote_and_master_to_the_pipeline(monkeypatch) -> None:
    seen: list[list[str]] = []
    monkeypatch.setattr(tasks, "_pipeline", lambda c, argv, conn: seen.append(argv))
    tasks.pipeline_enqueue(MockContext(), input="x", rejects="r", remote="sc://spark:15002")
    tasks.pipeline_archive(MockContext(), older_than_minutes="60", archive="a", master="spark://m:7077")
    tasks.pipeline_archive(MockContext(), older_than_minutes="60", archive="a")
    assert seen[0][seen[0].index("--remote") + 1] == "sc://spark:15002" and "--master" not in seen[0]
    assert seen[1][seen[1].index("--master") + 1] == "spark://m:7077" and "--remote" not in seen[1]
    assert "--remote" not in seen[2] and "--master" not in seen[2]


@pytest.mark.parametrize("given, environ, where", [
    ({"remote": "sc://s:15002"}, {}, (None, "sc://s:15002")),
    ({"master": "local[3]"}, {"SPARK_REMOTE": "sc://env:15002"}, ("local[3]", None)),
    ({}, {"SPARK_REMOTE": "sc://env:15002"}, (None, "sc://env:15002")),
    ({}, {}, (None, None)),
])
def test_the_report_and_the_demo_run_where_the_options_then_spark_remote_say(monkeypatch, given, environ,
                                                                             where) -> None:
    from relq.pipeline import demo, report

    runs: list[tuple] = []

    class Paths:
        html, json, health, health_note = "r.html", "r.json", "none", ""

    def ran(*args, **kwargs):
        runs.append((args[2], kwargs["remote"]))
        return Paths()

    monkeypatch.delenv("SPARK_REMOTE", raising=False)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(report, "run", ran)
    monkeypatch.setattr(demo, "run", ran)
    monkeypatch.delenv("RELQ_MSSQL", raising=False)
    tasks.pipeline_report(MockContext(config=Config()), archive="a", out="o", **given)
    tasks.pipeline_demo(MockContext(config=Config()), rows="10", out="o", **given)
    assert runs == [where, where]


def test_a_master_and_a_remote_together_are_the_tasks_one_line(capsys) -> None:
    for name, call in (("pipeline.report", tasks.pipeline_report), ("pipeline.demo", tasks.pipeline_demo)):
        with pytest.raises(tasks.Exit) as info:
            call(MockContext(config=Config()), out="o", master="local[2]", remote="sc://s:15002",
                 **({"archive": "a"} if name == "pipeline.report" else {}))
        lines = [info.value.message] if info.value.message else capsys.readouterr().err.strip().splitlines()
        assert info.value.code != 0
        assert lines == [f"{name}: --master and --remote: pass one "
                         f"(a Spark master, or a Spark Connect server)"]


def test_new_queue_prints_its_one_line_summary_not_its_paths(monkeypatch, capsys) -> None:
    class Made:
        written = ("database/tables/dbo.Invoice.sql",) * 53

        def summary(self) -> str:
            return "Invoice added: 53 files"

    monkeypatch.setattr("relq.scaffold.new_queue", lambda root, name, types, noun, subtypes: Made())
    tasks.new_queue(MockContext(), name="Invoice", types="InvoicePdf")
    assert capsys.readouterr().err.splitlines() == ["Invoice added: 53 files"]
