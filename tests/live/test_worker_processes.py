"""Worker processes against a real SQL Server and a real SMTP server: four
``python -m relq.worker`` processes drain 5,000 password-reset notifications into
an SMTP server (aiosmtpd) in the test process, and one of them is killed with
SIGKILL mid-run.

It proves that nothing is lost: every item ends Completed, with at least one
message to its own address. Every item got exactly one message, except items
that the killed worker held when it died. That worker may have sent one of them
and died before it reported; its lease expired and another worker sent it again.
Each such item has exactly two messages, and the killed worker's attempt ended as
abandoned. The other workers stop cleanly on SIGTERM, print their summary, and
leave no attempt open."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter, defaultdict
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from relq import db
from relq.deploy.apply import deploy
from tests.conftest import REPO
from tests.smtp import HOST, Mailbox, serve

pytestmark = pytest.mark.mssql

ITEMS = 5_000
PROCESSES = 4
CONCURRENCY = 2
BATCH = 5
KILL_AFTER = 500  # messages received before process 0 is killed
LEASE_S = 15  # long enough that no survivor's renewal falls behind, short enough to wait for
MAX_ATTEMPTS = 5
LANGUAGES = ("en", "de", "fr")
SENDER = "relq@example.com"
START_DEADLINE_S = 300  # for the first KILL_AFTER messages to arrive
DRAIN_DEADLINE_S = 900
STOP_TIMEOUT_S = 60
QUERY_TIMEOUT_S = 120

SETTINGS = f"""
MERGE dbo.AppSettings AS target
USING (
    VALUES
    ('notification.leaseSeconds', {LEASE_S}),
    ('notification.maxAttempts', {MAX_ATTEMPTS})
) AS source(Param, ValInt)
    ON target.Param = source.Param
WHEN MATCHED THEN UPDATE SET ValInt = source.ValInt
WHEN NOT MATCHED THEN INSERT (Param, ValInt) VALUES (source.Param, source.ValInt);
"""

UNFINISHED = "SELECT COUNT(*) FROM dbo.Notification WHERE [Status] IN ('Pending', 'Processing', 'Error');"


def key_of(value: Any) -> datetime:
    """An item's key, from the database (a datetime) or from X-Relq-Item (isoformat)."""
    return value if isinstance(value, datetime) else datetime.fromisoformat(str(value))


def worker_env(conn_str: str, port: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("RELQ_SMTP_USER", "RELQ_SMTP_PASSWORD")}
    env.update(RELQ_MSSQL=conn_str, RELQ_SMTP_HOST=HOST, RELQ_SMTP_PORT=str(port),
               RELQ_SMTP_FROM=SENDER, RELQ_SMTP_STARTTLS="0", PYTHONUNBUFFERED="1")
    return env


def tail(path: Path, lines: int = 20) -> str:
    return "\n".join(path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])


def stop_while_holding(proc: subprocess.Popen, cursor, holding: str) -> None:
    """Stop ``proc`` (SIGSTOP) at an instant it holds items: a worker between a report and its
    next claim holds none. A statement it had already sent still ends on the server, so what
    it holds is read once that has had time to; stopped, it sends nothing more."""
    deadline = time.monotonic() + START_DEADLINE_S
    while True:
        proc.send_signal(signal.SIGSTOP)
        time.sleep(0.5)
        if db.query(cursor, holding)[0][0] > 0:
            return
        assert time.monotonic() < deadline, "the stopped worker never held an item"
        proc.send_signal(signal.SIGCONT)
        time.sleep(0.05)


@pytest.mark.skipif(os.name != "posix", reason="stops a worker with SIGSTOP (POSIX)")
def test_four_worker_processes_send_every_notification_despite_a_killed_one(
    mssql, new_database, tmp_path: Path
) -> None:
    deploy(REPO, mssql, create_db=new_database)
    conn_str = db.with_database(mssql.conn_str, new_database)
    mailbox = Mailbox()
    # A fixed server hostname spares every SMTP connection a getfqdn() lookup.
    controller = serve(mailbox, server_hostname="relq-test.invalid")
    conn = None
    procs: list[subprocess.Popen] = []
    try:
        conn = db.connect(conn_str)
        conn.timeout = QUERY_TIMEOUT_S
        cursor = conn.cursor()
        db.run_batch(cursor, SETTINGS)

        # Enqueue one call at a time on one connection: each call's key tells where it must go.
        addresses: dict[datetime, str] = {}
        for n in range(1, ITEMS + 1):
            result = db.call(conn, "dbo.Add_Notification_ResetPassword_trx", UserID=n,
                             Username=f"user{n}", OTP="123456", EmailTo=f"user{n}@example.com",
                             PreferredLanguage=LANGUAGES[n % len(LANGUAGES)])
            assert result.return_code == 0, n
            addresses[key_of(result.result_sets[0][0][0])] = f"user{n}@example.com"
        assert len(addresses) == ITEMS
        assert db.query(cursor, "SELECT COUNT(*) FROM dbo.Notification;")[0][0] == ITEMS

        env = worker_env(conn_str, controller.port)
        logs: list[tuple[Path, Path]] = []
        for n in range(PROCESSES):
            out, err = tmp_path / f"proc-{n}.out", tmp_path / f"proc-{n}.err"
            logs.append((out, err))
            with out.open("wb") as stdout, err.open("wb") as stderr:
                procs.append(subprocess.Popen(
                    [sys.executable, "-m", "relq.worker", "--queue", "Notification",
                     "--concurrency", str(CONCURRENCY), "--batch", str(BATCH),
                     "--grace", "10", "--name", f"proc-{n}"],
                    cwd=REPO, env=env, stdout=stdout, stderr=stderr))

        def check_alive(survivors: list[subprocess.Popen]) -> None:
            for n, proc in enumerate(procs):
                if proc in survivors and proc.poll() is not None:
                    pytest.fail(f"proc-{n} exited early ({proc.returncode}):\n{tail(logs[n][1])}")

        # Kill process 0 once the run is well under way.
        deadline = time.monotonic() + START_DEADLINE_S
        holding = ("SELECT COUNT(*) FROM dbo.Notification "
                   "WHERE [Status] = 'Processing' AND LockedBy LIKE 'proc-0/%';")
        while mailbox.count() < KILL_AFTER or db.query(cursor, holding)[0][0] == 0:
            check_alive(procs)
            assert time.monotonic() < deadline, f"only {mailbox.count()} messages arrived"
            time.sleep(0.05)
        stop_while_holding(procs[0], cursor, holding)
        procs[0].kill()
        procs[0].wait()
        # What the dead worker held: only these may have been sent twice.
        held_by_killed = {key_of(k) for (k,) in db.query(
            cursor, "SELECT EnqueuedAt FROM dbo.Notification "
                    "WHERE [Status] = 'Processing' AND LockedBy LIKE 'proc-0/%';")}
        assert 0 < len(held_by_killed) <= CONCURRENCY * BATCH  # the kill did leave work behind

        # The others drain the rest, the dead worker's items once their lease expires.
        survivors = procs[1:]
        deadline = time.monotonic() + DRAIN_DEADLINE_S
        while (left := db.query(cursor, UNFINISHED)[0][0]) > 0:
            check_alive(survivors)
            assert time.monotonic() < deadline, f"{left} items still unfinished"
            time.sleep(1)

        # SIGTERM: each survivor stops cleanly and ends its output with the summary table.
        for proc in survivors:
            proc.send_signal(signal.SIGTERM)
        for n, proc in enumerate(survivors, start=1):
            assert proc.wait(timeout=STOP_TIMEOUT_S) == 0, tail(logs[n][1])
            lines = logs[n][1].read_text(encoding="utf-8", errors="replace").splitlines()
            last_log = max((i for i, line in enumerate(lines) if line.startswith("{")), default=-1)
            assert any("relq worker: Notification" in line for line in lines[last_log + 1:]), tail(logs[n][1])

        # Every item Completed: nothing lost, nothing left Processing.
        statuses = Counter(dict(db.query(cursor, "SELECT [Status], COUNT(*) FROM dbo.Notification "
                                                 "GROUP BY [Status];")))
        assert statuses == Counter({"Completed": ITEMS})

        # The history: no attempt open; the dead worker's attempts ended as abandoned.
        attempts = db.query(cursor, "SELECT EnqueuedAt, LockedBy, Outcome, Error "
                                    "FROM dbo.NotificationAttempt;")
        assert [a for a in attempts if a[2] is None] == []
        history = defaultdict(list)
        for key, locked_by, outcome, error in attempts:
            history[key_of(key)].append((locked_by, outcome, error))
        for key in held_by_killed:
            # abandoned, unless a report proc-0 had already sent committed after the snapshot
            assert any(by.startswith("proc-0/") and ((error or "").startswith("abandoned")
                                                       or outcome == "Completed")
                       for by, outcome, error in history[key]), (key, history[key])

        # The mail: every item's message, to its own address, once; twice only where the
        # dead worker held the item.
        received = mailbox.snapshot()
        assert all(header is not None for header, _ in received)
        sent = Counter(key_of(header) for header, _ in received)
        assert set(sent) == set(addresses), "messages missing, or for items nobody enqueued"
        wrong = [(header, to) for header, to in received if to != [addresses[key_of(header)]]]
        assert wrong == []
        twice = {key: count for key, count in sent.items() if count > 1}
        assert set(twice) <= held_by_killed, {k: history[k] for k in set(twice) - held_by_killed}
        assert all(count == 2 for count in twice.values()), twice
        assert len(received) == ITEMS + len(twice)
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
        controller.stop()
        if conn is not None:
            conn.close()
