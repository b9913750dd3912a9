"""The pipeline's command line: configuration defaults, one-line errors."""

from __future__ import annotations

import pytest

from relq.pipeline.cli import main, parser, spark_error

CONFIG = {"relq": {"pipeline": {"archive": "/data/archive", "rejects": "/data/rejects", "master": "local[2]",
                                "partitions": 3}}}


def test_paths_and_master_come_from_the_configuration_unless_given() -> None:
    args = parser(CONFIG).parse_args(["enqueue", "--input", "items.parquet"])
    assert (args.rejects, args.archive, args.master, args.partitions, args.queue) == (
        "/data/rejects", "/data/archive", "local[2]", 3, "SyncQueue")
    args = parser(CONFIG).parse_args(["archive", "--older-than-minutes", "60", "--archive", "/elsewhere",
                                      "--master", "spark://h:7077"])
    assert (args.archive, args.master, args.older_than_minutes) == ("/elsewhere", "spark://h:7077", 60)
    assert parser(None).parse_args(["archive", "--older-than-minutes", "1"]).master is None  # local[*]


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
