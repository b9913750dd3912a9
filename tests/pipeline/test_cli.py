"""The pipeline's command line: configuration defaults, one-line errors."""

from __future__ import annotations

import pytest

from relq.errors import RelqError
from relq.pipeline.cli import main, parser, spark_error
from relq.pipeline.spark import check_remote, here, session, shown_remote, target

CONFIG = {"relq": {"pipeline": {"archive": "/data/archive", "rejects": "/data/rejects", "master": "local[2]",
                                "partitions": 3}}}


def test_paths_come_from_the_configuration_unless_given() -> None:
    args = parser(CONFIG).parse_args(["enqueue", "--input", "items.parquet"])
    assert (args.rejects, args.archive, args.master, args.remote, args.partitions, args.queue) == (
        "/data/rejects", "/data/archive", None, None, 3, "SyncQueue")
    args = parser(CONFIG).parse_args(["archive", "--older-than-minutes", "60", "--archive", "/elsewhere",
                                      "--master", "spark://h:7077"])
    assert (args.archive, args.master, args.older_than_minutes) == ("/elsewhere", "spark://h:7077", 60)
    args = parser(None).parse_args(["archive", "--older-than-minutes", "1", "--remote", "sc://h:15002"])
    assert (args.master, args.remote) == (None, "sc://h:15002")


@pytest.mark.parametrize("master, remote, environ, config, where", [
    (None, None, {}, None, (None, None)),  # local[*]
    (None, None, {}, CONFIG, ("local[2]", None)),
    ("spark://h:7077", None, {"SPARK_REMOTE": "sc://env"}, CONFIG, ("spark://h:7077", None)),
    (None, "sc://h:15002", {"SPARK_REMOTE": "sc://env"}, CONFIG, (None, "sc://h:15002")),
    (None, None, {"SPARK_REMOTE": "sc://env"}, CONFIG, (None, "sc://env")),  # the environment, then the file
    (None, None, {"SPARK_REMOTE": " "}, CONFIG, ("local[2]", None)),
    (None, None, {}, {"relq": {"pipeline": {"remote": "sc://yaml:15002"}}}, (None, "sc://yaml:15002")),
])
def test_where_a_command_runs_is_the_option_then_spark_remote_then_invoke_yaml(master, remote, environ,
                                                                               config, where) -> None:
    assert target(master, remote, config, environ) == where


@pytest.mark.parametrize("master, remote, config, message", [
    ("local[2]", "sc://h", None,
     "--master and --remote: pass one (a Spark master, or a Spark Connect server)"),
    (None, None, {"relq": {"pipeline": {"remote": "sc://h", "master": "local[2]"}}},
     "invoke.yaml's relq.pipeline sets both master and remote: keep one"),
])
def test_a_master_and_a_server_together_are_one_line(master, remote, config, message) -> None:
    with pytest.raises(RelqError) as info:
        target(master, remote, config, {})
    assert str(info.value) == message


@pytest.mark.parametrize("remote, ok", [
    ("sc://h", True), ("sc://h:15002", True), ("sc://10.0.0.1:443/;use_ssl=true;token=abc", True),
    ("sc://[::1]:15002", True), ("http://h:15002", False), ("h:15002", False), ("sc://:15002", False),
    ("sc://h:99999", False), ("local", False),
])
def test_a_spark_connect_url_is_checked_before_anything_starts(remote, ok) -> None:
    if ok:
        check_remote(remote)
    else:
        with pytest.raises(RelqError, match=r"^--remote .*: not a Spark Connect URL \(sc://host:15002, as "
                                            r"SPARK_REMOTE takes\)$"):
            check_remote(remote)


def test_a_spark_connect_url_is_shown_without_its_token_or_user() -> None:
    assert shown_remote("sc://h:15002/;use_ssl=true;token=s3cr3t") == "sc://h:15002"
    assert shown_remote("sc://me:pw@h:15002") == "sc://h:15002"
    assert shown_remote("sc://h") == "sc://h"
    with pytest.raises(RelqError) as info:
        check_remote("http://me:pw@h:1/;token=s3cr3t")
    assert "s3cr3t" not in str(info.value) and "pw" not in str(info.value)


@pytest.mark.parametrize("remote, local", [
    (None, True), ("sc://localhost:15002", True), ("sc://127.0.0.1", True), ("sc://[::1]:1", True),
    ("sc://spark.example.com:15002", False), ("sc://10.1.2.3:15002", False),
])
def test_paths_are_this_machines_unless_a_spark_connect_server_elsewhere_reads_them(remote, local) -> None:
    assert here(remote) is local


def test_a_spark_connect_server_that_does_not_answer_is_one_line_at_once(capsys, monkeypatch) -> None:
    import socket
    import time

    with socket.socket() as free:  # a port nothing listens on: bound, never listening
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
        monkeypatch.delenv("RELQ_MSSQL", raising=False)
        began = time.monotonic()
        with pytest.raises(RelqError) as info:
            session(remote=f"sc://127.0.0.1:{port}/;token=s3cr3t")
    assert time.monotonic() - began < 30
    assert str(info.value).startswith(f"no Spark Connect server answers at sc://127.0.0.1:{port} (")
    assert str(info.value).endswith("start one (sbin/start-connect-server.sh) or pass another --remote")
    assert "s3cr3t" not in str(info.value)


def test_no_server_configured_is_one_line(monkeypatch, capsys) -> None:
    monkeypatch.delenv("RELQ_MSSQL", raising=False)
    assert main(["archive", "--older-than-minutes", "60", "--archive", "/tmp/a"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["pipeline.archive: no SQL Server configured: set RELQ_MSSQL to an ODBC connection string, "
                   "pass --conn, or set relq.mssql in invoke.yaml"]


def test_an_error_from_a_spark_task_becomes_its_last_python_line() -> None:
    text = ("An error occurred while calling o12.collect.\n: org.apache.spark.SparkException: Job aborted\n"
            "Traceback (most recent call last):\n  File \"x.py\", line 1, in send\n"
            "relq.errors.RelqError: cannot reach SQL Server (server=db, port=1433): timeout\n"
            "\tat org.apache.spark.api.python.BasePythonRunner...\n")
    assert spark_error(RuntimeError(text)) == ("relq.errors.RelqError: cannot reach SQL Server (server=db, "
                                               "port=1433): timeout")


@pytest.mark.parametrize("argv, line", [
    (["archive"], "pipeline.archive: the following arguments are required: --older-than-minutes "
                  "(invoke pipeline.archive --help)"),
    (["enqueue", "--format", "xml", "--input", "x"],
     "pipeline.enqueue: --format: invalid choice: 'xml' (choose from 'parquet', 'csv', 'json') "
     "(invoke pipeline.enqueue --help)"),
    (["archive", "--older-than-minutes", "60", "--partitions", "-1"],
     "pipeline.archive: --partitions: must be 1 or more, not -1 (invoke pipeline.archive --help)"),
    (["purge"], "pipeline: command: invalid choice: 'purge' (choose from 'enqueue', 'archive') "
                "(invoke --list pipeline)"),
])
def test_missing_or_bad_arguments_are_one_line_and_exit_code_2(capsys, argv, line) -> None:
    assert main(argv) == 2
    assert capsys.readouterr().err.splitlines() == [line]


def test_any_queue_name_is_taken_by_both_commands_and_a_bad_one_is_one_line(monkeypatch, capsys) -> None:
    args = parser(None).parse_args(["enqueue", "--input", "x", "--queue", "Notification"])
    assert args.queue == "Notification"
    assert parser(None).parse_args(["archive", "--older-than-minutes", "1", "--queue", "InvoiceExport"]
                                   ).queue == "InvoiceExport"
    monkeypatch.delenv("RELQ_MSSQL", raising=False)
    assert main(["enqueue", "--input", "x", "--rejects", "/tmp/r", "--queue", "bad-name"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("pipeline.enqueue: unknown queue 'bad-name'")


@pytest.mark.usefixtures("without_unixodbc")
def test_without_unixodbc_the_commands_stop_in_one_line_before_spark_starts(capsys) -> None:
    argv = ["archive", "--older-than-minutes", "60", "--archive", "/tmp/a"]
    assert main(argv, conn="DRIVER={FreeTDS};SERVER=h") == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(
        "pipeline.archive: unixODBC and an ODBC driver are not installed (apt-get install unixodbc tdsodbc; "
        "dnf install unixODBC freetds; brew install unixodbc freetds)")
