"""`invoke worker` / `python -m relq.worker` offline: options, handler modules, the
signals that stop it, and the summary."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
import types

import pytest
from rich.console import Console
from sqlfluff.core import FluffConfig, Linter

from relq import db
from relq.errors import RelqError
from relq.worker.cli import _CLAIM_PROCEDURES, check_queue, load_handlers, main, run_worker, summary_table
from relq.worker.handlers import Handlers
from relq.worker.runtime import Settings
from relq.worker.stats import Stats
from tests.worker.memory_queue import MemoryQueue


def test_a_queue_gets_its_own_handlers_by_default(monkeypatch) -> None:
    monkeypatch.setenv("RELQ_SMTP_HOST", "localhost")
    monkeypatch.setenv("RELQ_SMTP_FROM", "relq@example.com")
    handlers = load_handlers("Notification", [])
    assert handlers.find("Notification", "ResetPassword", None) is not None


def test_a_handler_module_registers_through_its_install_function(monkeypatch) -> None:
    module = types.ModuleType("relq_test_jobs")
    module.install = lambda handlers: handlers.register("SyncQueue", "CustomerSync")(lambda item: "ok")
    monkeypatch.setitem(sys.modules, "relq_test_jobs", module)
    assert load_handlers("SyncQueue", ["relq_test_jobs"]).find("SyncQueue", "CustomerSync", None)


@pytest.mark.parametrize("queue, modules, message", [
    ("SyncQueue", [], "no handler is registered for queue SyncQueue"),
    ("SyncQueue", ["relq_no_such_module"], "--handlers relq_no_such_module: cannot import it"),
    ("SyncQueue", ["relq.errors"], "--handlers relq.errors: the module has no install(handlers) function"),
])
def test_a_worker_without_handlers_for_its_queue_is_refused_in_one_line(queue, modules, message) -> None:
    with pytest.raises(RelqError, match="^" + message.replace("(", r"\(").replace(")", r"\)")):
        load_handlers(queue, modules)


@pytest.mark.parametrize("args, line", [
    (["--concurrency", "0"], "worker: --concurrency must be 1-64, not 0"),
    (["--batch", "1001"], "worker: --batch must be 1-1000, not 1001"),
    (["--wait-ms", "60001"], "worker: --wait-ms must be 0-60000, not 60001"),
    (["--max-poll-ms", "99"], "worker: --max-poll-ms must be 100-60000, not 99"),
    (["--grace", "-1"], "worker: --grace must be 0 seconds or more, not -1"),
    (["--grace", "nan"], "worker: --grace must be 0 seconds or more, not nan"),
])
def test_an_option_out_of_range_is_named_alone_in_one_line_and_exit_code_1(args, line, capsys) -> None:
    assert main(["--queue", "Notification", *args]) == 1
    assert capsys.readouterr().err.strip().splitlines() == [line]


class CatalogConnection:
    """A connection whose database answers the worker's two catalogue questions."""

    def __init__(self, database: str, procedures: list[str]) -> None:
        self.answers = {"SELECT DB_NAME();": [(database,)], _CLAIM_PROCEDURES: [(p,) for p in procedures]}
        self.closed = False

    def cursor(self) -> CatalogConnection:
        return self

    def execute(self, sql: str, *params: object) -> None:
        self.rows = self.answers[sql]

    description = (("name", None),)

    def fetchall(self) -> list[tuple]:
        return self.rows

    def nextset(self) -> bool:
        return False

    def close(self) -> None:
        self.closed = True


@pytest.mark.parametrize("procedures, known", [
    (["Next_Notification_Batch_trx", "Next_SyncQueue_Batch_trx"],
     "the queues this login may claim from are Notification, SyncQueue"),
    ([], "this login may claim from no queue there (is the project deployed, and the login in the "
         "QueueWorker role?)"),
])
def test_a_queue_the_database_lacks_is_named_with_those_it_has(monkeypatch, capsys, procedures,
                                                               known) -> None:
    conn = CatalogConnection("relq", procedures)
    monkeypatch.setattr(db, "connect", lambda conn_str: conn)
    assert main(["--queue", "Nope"], conn="DRIVER=x;SERVER=h") == 1
    assert capsys.readouterr().err.strip().splitlines() == [f"worker: queue Nope does not exist in database "
                                                            f"relq: {known}"]
    assert conn.closed


def test_a_queue_the_database_has_passes_the_check() -> None:
    check_queue(CatalogConnection("relq", ["Next_SyncQueue_Batch_trx"]), "SyncQueue")
    # SQL Server's usual collations ignore case, and so does the check
    check_queue(CatalogConnection("relq", ["Next_SyncQueue_Batch_trx"]), "syncqueue")


def test_a_queue_name_that_is_no_name_is_refused_before_connecting(monkeypatch, capsys) -> None:
    monkeypatch.setattr(db, "connect", lambda conn_str: pytest.fail("connected"))
    assert main(["--queue", "Sync Queue"], conn="DRIVER=x;SERVER=h") == 1
    assert capsys.readouterr().err.strip().splitlines() == [
        "worker: queue 'Sync Queue' does not exist: a queue's name is letters and digits"]


def test_the_claim_procedures_query_is_t_sql() -> None:
    parsed = Linter(config=FluffConfig(overrides={"dialect": "tsql"})).parse_string(_CLAIM_PROCEDURES)
    assert parsed.violations == []


def test_sigterm_stops_the_worker_cleanly_and_a_second_signal_ends_it_at_once() -> None:
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signals reach the main thread only")
    queue, handlers = MemoryQueue(), Handlers()
    started, go_on = threading.Event(), threading.Event()

    def held(item):
        started.set()
        go_on.wait(10)
        return "done"

    handlers.register("Notification", "ResetPassword")(held)
    key = queue.add()
    previous = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}

    def operator() -> None:  # stops the worker while an item is in hand, then lets it finish
        started.wait(10)
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.3)
        go_on.set()

    threading.Thread(target=operator, daemon=True).start()
    try:
        worker = run_worker(Settings("Notification", "t", grace_s=5), handlers, queue.procedures)
        assert queue.rows[key].status == "Completed"  # the item in hand finished within the grace
        assert worker.stats.summary()["completed"] == 1 and worker.failure is None
        with pytest.raises(SystemExit, match="stopped by a second SIGTERM"):
            signal.getsignal(signal.SIGTERM)(signal.SIGTERM, None)
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def test_the_summary_is_a_table_of_the_counts_and_times() -> None:
    stats = Stats()
    stats.add("claimed", 3)
    stats.add("completed", 2)
    stats.add("retried")
    stats.timed(0.010)
    stats.timed(0.030)
    console = Console(record=True, width=120)
    console.print(summary_table("Notification", stats))
    text = console.export_text()
    assert "relq worker: Notification" in text
    row = [line for line in text.splitlines() if "3" in line and "│" in line][-1]
    cells = [cell.strip() for cell in row.strip("│ ").split("│")]
    assert cells == ["3", "2", "1", "0", "0", "0", "0", "0", "20", "30"]


def test_a_worker_that_stops_by_itself_exits_1_saying_why(monkeypatch, capsys) -> None:
    """A supervisor (systemd's Restart=on-failure, Kubernetes) restarts it; a clean stop exits 0."""
    from relq.worker import cli

    class Refused(MemoryQueue):
        def claim(self, *_args, **_kwargs) -> list:
            raise db.SqlError([db.ServerMessage(229, "The EXECUTE permission was denied", "42000")])

    queue, handlers = Refused(), Handlers()
    handlers.register("Notification", "ResetPassword")(lambda item: "ok")
    monkeypatch.setattr(cli, "sql_connector", lambda conn_str, queue_name: queue.procedures)
    monkeypatch.setattr(cli, "load_handlers", lambda queue_name, modules: handlers)
    assert main(["--queue", "Notification", "--wait-ms", "0"], conn="DRIVER=x;SERVER=h") == 1
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        "worker: the claim was refused: SqlError: SQL Server error 229: The EXECUTE permission was denied")


@pytest.mark.parametrize("args, wait_ms, max_poll_s", [
    ([], 0, 1.0),  # the default: idle slots share one poll, nothing waits in SQL Server
    (["--wait-ms", "5000", "--max-poll-ms", "100"], 5000, 0.1),
])
def test_the_wait_options_reach_the_worker_settings(monkeypatch, args, wait_ms, max_poll_s) -> None:
    from relq.worker import cli

    seen: list[Settings] = []
    queue = MemoryQueue()
    monkeypatch.setattr(cli, "sql_connector", lambda conn_str, queue_name: queue.procedures)
    monkeypatch.setattr(cli, "load_handlers", lambda queue_name, modules: Handlers())
    monkeypatch.setattr(cli, "run_worker", lambda settings, handlers, connect: seen.append(settings) or
                        cli.Worker(settings, handlers, connect))
    assert main(["--queue", "Notification", *args], conn="DRIVER=x;SERVER=h") == 0
    assert (seen[0].wait_ms, seen[0].max_poll_s) == (wait_ms, max_poll_s)
