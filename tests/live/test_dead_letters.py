"""Failure counts and dead letters of the message queues against a real SQL Server: consumers
that roll back and record their failures with dbo.Fail_<Kind>_trx, the move to dbo.DeadLetter
at the maximum, a receive's DeliveryCount, replay and delete by operators who race each other,
the T-SQL consumer of docs/message-queues.md, and the roles' grants."""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from relq import db
from relq.errors import Msg

pytestmark = pytest.mark.mssql

TRANSPORT = "DeadLetterTests"  # this module's own transport queue
MAX = 3  # '<kind>.maxDeliveries' while a test runs
QUERY_TIMEOUT_S = 120  # a lock wait that never ends fails the test instead of hanging the run
JOIN_TIMEOUT_S = 300


@dataclass(frozen=True)
class Kind:
    """A kind of message queue with dead letters: its procedures, named in full."""

    send: str  # a batch that sends ? as the payload
    receive: str  # the _utx receive
    drain: str  # the _trx receive
    fail: str
    key: Callable[[dict[str, Any]], dict[str, Any]]  # a received row -> the failure's key parameters
    payload: str = "Payload"  # the received row's column of the payload
    params: tuple[tuple[str, str], ...] = ()  # what a receive takes besides @BatchSize


KINDS = {
    "FifoQueue": Kind("EXEC dbo.Send_FifoQueue_trx @Payload = ?;", "dbo.Receive_FifoQueue_utx",
                      "dbo.Receive_FifoQueue_trx", "dbo.Fail_FifoQueue_trx", lambda r: {"Id": r["Id"]}),
    "StrictFifoQueue": Kind("EXEC dbo.Send_StrictFifoQueue_trx @Payload = ?;",
                            "dbo.Receive_StrictFifoQueue_utx", "dbo.Receive_StrictFifoQueue_trx",
                            "dbo.Fail_StrictFifoQueue_trx", lambda r: {"Id": r["Id"]}),
    "LifoStack": Kind("EXEC dbo.Send_LifoStack_trx @Payload = ?;", "dbo.Receive_LifoStack_utx",
                      "dbo.Receive_LifoStack_trx", "dbo.Fail_LifoStack_trx", lambda r: {"Id": r["Id"]}),
    # DueAt comes back as a Python datetime, to the microsecond: the failure finds the row all the same.
    "PendingQueue": Kind("EXEC dbo.Send_PendingQueue_trx @Payload = ?;", "dbo.Receive_PendingQueue_utx",
                         "dbo.Receive_PendingQueue_trx", "dbo.Fail_PendingQueue_trx",
                         lambda r: {"DueAt": r["DueAt"], "Id": r["Id"]}),
    "TransportMessage": Kind(f"EXEC dbo.Send_TransportMessage_trx @Queue = '{TRANSPORT}', @Body = ?;",
                             "dbo.Receive_TransportMessage_utx", "dbo.Receive_TransportMessage_trx",
                             "dbo.Fail_TransportMessage_trx",
                             lambda r: {"Queue": TRANSPORT, "RowVersion": r["RowVersion"]},
                             payload="Body", params=(("Queue", TRANSPORT),)),
}


@pytest.fixture(scope="module", params=["live_database", "rcsi_database"], ids=["rcsi-off", "rcsi-on"])
def queues(request: pytest.FixtureRequest, mssql) -> str:
    """A session's database with this module's transport queue: every test runs with
    READ_COMMITTED_SNAPSHOT off and on."""
    conn_str = db.with_database(mssql.conn_str, request.getfixturevalue(request.param))
    conn = db.connect(conn_str)
    try:
        assert db.call(conn, "dbo.Add_TransportQueue_trx", Endpoint=TRANSPORT).return_code == 0
    finally:
        conn.close()
    return conn_str


@pytest.fixture
def dbo(queues: str) -> Iterator[Any]:
    conn = db.connect(queues)
    conn.timeout = QUERY_TIMEOUT_S
    yield conn
    conn.close()


def rows(result: db.CallResult) -> list[dict[str, Any]]:
    """The first result set of a call, as dicts by column name."""
    return [dict(zip(result.columns[0], row, strict=True)) for row in result.result_sets[0]]


def empty(conn: Any, kind: str) -> None:
    """Receive (and so drop) whatever an earlier test left in the queue: the database is shared."""
    while db.call(conn, KINDS[kind].drain, BatchSize=1000, **dict(KINDS[kind].params)).result_sets[0]:
        pass


def send(conn: Any, kind: str) -> bytes:
    """One message with a payload of its own."""
    payload = secrets.token_bytes(8)
    db.query(conn.cursor(), KINDS[kind].send, payload)
    return payload


def set_max(conn: Any, kind: str, value: int | None) -> None:
    """'<kind>.maxDeliveries' set to ``value``, or its row deleted (the default, 5) for None."""
    name = f"{kind.lower()}.maxDeliveries"
    cursor = conn.cursor()
    db.query(cursor, "DELETE FROM dbo.AppSettings WHERE Param = ?;", name)
    if value is not None:
        db.query(cursor, "INSERT INTO dbo.AppSettings (Param, ValInt) VALUES (?, ?);", name, value)


def letters(conn: Any, kind: str, payload: bytes) -> list[tuple]:
    """(DeadLetterId, DeliveryCount, Error) of the dead letters of ``payload``."""
    return db.query(conn.cursor(), "SELECT DeadLetterId, DeliveryCount, Error FROM dbo.DeadLetter "
                                   "WHERE Kind = ? AND Payload = ? ORDER BY DeadLetterId;", kind, payload)


TABLES = {"FifoQueue": "dbo.FifoQueue", "StrictFifoQueue": "dbo.StrictFifoQueue",
          "LifoStack": "dbo.LifoStack", "PendingQueue": "dbo.PendingQueue",
          "TransportMessage": "dbo.TransportMessage"}


def queued(conn: Any, kind: str, payload: bytes) -> int:
    """How many messages of the queue carry ``payload``."""
    sql = f"SELECT COUNT(*) FROM {TABLES[kind]} WHERE {KINDS[kind].payload} = ?;"
    return db.query(conn.cursor(), sql, payload)[0][0]


def counts(conn: Any, kind: str) -> list[tuple]:
    """(MessageKey, Failures) of the kind's failure counts."""
    sql = "SELECT MessageKey, Failures FROM dbo.MessageFailure WHERE Kind = ?;"
    return db.query(conn.cursor(), sql, kind)


class Failing(Exception):
    """What the consumers of these tests do with every message."""


def fail_once(conn: Any, kind: str, error: str) -> tuple[dict[str, Any] | None, Any]:
    """One delivery that fails: receive inside a transaction, roll back, then record the
    failure in a transaction of its own. (the received row or None, Fail's row or the
    SqlError it raised)."""
    spec = KINDS[kind]
    try:
        with db.transaction(conn):
            got = rows(db.call(conn, spec.receive, **dict(spec.params)))
            if not got:
                return None, None
            raise Failing(got[0])
    except Failing as failing:
        row = failing.args[0]
    try:
        return row, rows(db.call(conn, spec.fail, Error=error, **spec.key(row)))[0]
    except db.SqlError as refused:
        return row, refused


@pytest.mark.parametrize("kind", KINDS)
def test_two_consumers_that_always_fail_move_a_message_to_the_dead_letters_exactly_once(
        queues: str, dbo: Any, kind: str) -> None:
    """Two consumers receive the one message in turn and fail on every delivery. Each
    failure is counted once, in order, and the one that reaches the maximum moves the
    message: one dead letter with the count and the last error, none left queued or
    counted. A consumer whose failure comes after the move is told 735715."""
    empty(dbo, kind)
    set_max(dbo, kind, MAX)
    try:
        payload = send(dbo, kind)
        done = threading.Event()
        lock = threading.Lock()
        deliveries: list[int] = []
        counted: list[tuple[int, int | None, str]] = []  # (Failures, DeadLetterId, error)
        gone: list[int] = []
        errors: list[str] = []

        def consume(name: str) -> None:
            conn = db.connect(queues)
            conn.timeout = QUERY_TIMEOUT_S
            deadline = time.monotonic() + JOIN_TIMEOUT_S / 2
            n = 0
            try:
                while not done.is_set() and time.monotonic() < deadline:
                    n += 1
                    error = f"{name} failed, delivery {n}"
                    row, result = fail_once(conn, kind, error)
                    if row is None:
                        time.sleep(0.02)
                        continue
                    with lock:
                        assert bytes(row[KINDS[kind].payload]) == payload, "a message of another test"
                        deliveries.append(row["DeliveryCount"])
                        if isinstance(result, db.SqlError):
                            if result.number != Msg.MessageNotQueued:
                                raise result
                            gone.append(1)
                            continue
                        counted.append((result["Failures"], result["DeadLetterId"], error))
                        if result["DeadLetterId"] is not None:
                            done.set()
            except Exception as exc:  # reported by the test
                errors.append(repr(exc))
                done.set()
            finally:
                conn.close()

        threads = [threading.Thread(target=consume, args=(f"consumer {i}",)) for i in (1, 2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=JOIN_TIMEOUT_S)
        assert not any(t.is_alive() for t in threads), "a consumer is still running"

        assert errors == []
        assert sorted(f for f, _, _ in counted) == list(range(1, MAX + 1)), counted
        moved = [(f, dl, e) for f, dl, e in counted if dl is not None]
        assert len(moved) == 1 and moved[0][0] == MAX, counted
        assert len(gone) <= 1, "only the other consumer can come after the move"
        assert len(deliveries) == len(counted) + len(gone)
        assert all(1 <= d <= MAX for d in deliveries), deliveries
        _, dead_letter_id, last_error = moved[0]
        assert letters(dbo, kind, payload) == [(dead_letter_id, MAX, last_error)]
        assert queued(dbo, kind, payload) == 0
        assert counts(dbo, kind) == []
        assert db.call(dbo, "dbo.Delete_DeadLetter_trx", DeadLetterId=dead_letter_id).return_code == 0
    finally:
        set_max(dbo, kind, None)


@pytest.mark.parametrize("kind", KINDS)
def test_a_redelivery_tells_its_count_and_a_committed_receive_clears_it(dbo: Any, kind: str) -> None:
    empty(dbo, kind)
    set_max(dbo, kind, None)
    payload = send(dbo, kind)
    seen = []
    for n in (1, 2):
        row, result = fail_once(dbo, kind, f"failure {n}")
        assert row is not None and not isinstance(result, db.SqlError), result
        seen.append((row["DeliveryCount"], result["Failures"], result["DeadLetterId"]))
    assert seen == [(1, 1, None), (2, 2, None)]  # below the default maximum, 5
    assert [f for _, f in counts(dbo, kind)] == [2]

    with db.transaction(dbo):
        got = rows(db.call(dbo, KINDS[kind].receive, **dict(KINDS[kind].params)))
    assert [(bytes(r[KINDS[kind].payload]), r["DeliveryCount"]) for r in got] == [(payload, 3)]
    assert counts(dbo, kind) == []  # committed with the receive
    assert letters(dbo, kind, payload) == []


@pytest.mark.parametrize("kind", KINDS)
def test_a_replay_by_two_operators_at_once_puts_the_message_back_once(
        queues: str, dbo: Any, kind: str) -> None:
    empty(dbo, kind)
    set_max(dbo, kind, 1)
    try:
        payload = send(dbo, kind)
        _, result = fail_once(dbo, kind, "poison")
        dead_letter_id = result["DeadLetterId"]
        assert dead_letter_id is not None and queued(dbo, kind, payload) == 0
    finally:
        set_max(dbo, kind, None)

    start = threading.Barrier(2)
    outcomes: list[Any] = []

    def replay() -> None:
        conn = db.connect(queues)
        conn.timeout = QUERY_TIMEOUT_S
        try:
            start.wait(timeout=30)
            outcomes.append(rows(db.call(conn, "dbo.Replay_DeadLetter_trx", DeadLetterId=dead_letter_id))[0])
        except db.SqlError as refused:
            outcomes.append(refused.number)
        finally:
            conn.close()

    threads = [threading.Thread(target=replay) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=JOIN_TIMEOUT_S)

    replayed = [o for o in outcomes if isinstance(o, dict)]
    assert len(replayed) == 1 and outcomes.count(Msg.DeadLetterGone) == 1, outcomes
    assert replayed[0]["Kind"] == kind
    assert letters(dbo, kind, payload) == []
    assert queued(dbo, kind, payload) == 1
    # A new message: its count starts again.
    with db.transaction(dbo):
        got = rows(db.call(dbo, KINDS[kind].receive, **dict(KINDS[kind].params)))
    assert [(bytes(r[KINDS[kind].payload]), r["DeliveryCount"]) for r in got] == [(payload, 1)]
    if kind != "TransportMessage":
        assert got[0]["Id"] == replayed[0]["MessageKey"]


def test_a_replayed_transport_message_keeps_its_id_correlation_and_headers(dbo: Any) -> None:
    empty(dbo, "TransportMessage")
    set_max(dbo, "TransportMessage", 1)
    try:
        sent = rows(db.call(dbo, "dbo.Send_TransportMessage_trx", Queue=TRANSPORT, CorrelationId="order-7",
                            ReplyToAddress=f"{TRANSPORT}.Replies", Headers='{"tenant":"a"}', Body=b"\x07"))
        _, result = fail_once(dbo, "TransportMessage", "poison")
    finally:
        set_max(dbo, "TransportMessage", None)
    replayed = rows(db.call(dbo, "dbo.Replay_DeadLetter_trx", DeadLetterId=result["DeadLetterId"]))[0]
    assert str(replayed["MessageId"]).lower() == str(sent[0]["Id"]).lower()
    got = rows(db.call(dbo, "dbo.Receive_TransportMessage_trx", Queue=TRANSPORT))
    assert [(str(r["Id"]).lower(), r["CorrelationId"], r["ReplyToAddress"], r["Headers"], bytes(r["Body"]))
            for r in got] == [(str(sent[0]["Id"]).lower(), "order-7", f"{TRANSPORT}.Replies",
                               '{"tenant":"a"}', b"\x07")]


def test_a_delete_refuses_a_letter_another_operator_replayed_or_deleted(dbo: Any) -> None:
    empty(dbo, "FifoQueue")
    set_max(dbo, "FifoQueue", 1)
    try:
        payloads = [send(dbo, "FifoQueue") for _ in range(2)]
        ids = [fail_once(dbo, "FifoQueue", "poison")[1]["DeadLetterId"] for _ in payloads]
    finally:
        set_max(dbo, "FifoQueue", None)
    assert db.call(dbo, "dbo.Replay_DeadLetter_trx", DeadLetterId=ids[0]).return_code == 0
    assert db.call(dbo, "dbo.Delete_DeadLetter_trx", DeadLetterId=ids[1]).return_code == 0
    for dead_letter_id in ids:
        for procedure in ("dbo.Delete_DeadLetter_trx", "dbo.Replay_DeadLetter_trx"):
            with pytest.raises(db.SqlError) as refused:
                db.call(dbo, procedure, DeadLetterId=dead_letter_id)
            assert refused.value.number == Msg.DeadLetterGone, str(refused.value)
    assert [queued(dbo, "FifoQueue", p) for p in payloads] == [1, 0]
    empty(dbo, "FifoQueue")


# The T-SQL consumer of docs/message-queues.md (Dead letters), its work replaced by a failure.
TSQL_CONSUMER = """
SET NOCOUNT ON;
SET XACT_ABORT ON;
DECLARE @Received TABLE (Id BIGINT, Payload VARBINARY(MAX), EnqueuedAt DATETIME2(7), DeliveryCount INT);
DECLARE @Id BIGINT;
DECLARE @Error NVARCHAR(MAX);
BEGIN TRY
    BEGIN TRANSACTION;
    INSERT INTO @Received EXEC dbo.Receive_FifoQueue_utx @BatchSize = 1;
    SELECT @Id = Id FROM @Received;
    IF @Id IS NOT NULL
        THROW 50001, N'the work failed', 1;  -- stands for the work on the message
    COMMIT TRANSACTION;
END TRY
BEGIN CATCH
    SET @Error = ERROR_MESSAGE();
    IF XACT_STATE() <> 0 ROLLBACK TRANSACTION;
    IF @Id IS NOT NULL
        EXEC dbo.Fail_FifoQueue_trx @Id = @Id, @Error = @Error;
END CATCH;
"""


def test_the_t_sql_consumer_of_the_docs_counts_its_failure(dbo: Any) -> None:
    empty(dbo, "FifoQueue")
    payload = send(dbo, "FifoQueue")
    key = db.query(dbo.cursor(), "SELECT Id FROM dbo.FifoQueue WHERE Payload = ?;", payload)[0][0]
    db.run_batch(dbo.cursor(), TSQL_CONSUMER)
    assert counts(dbo, "FifoQueue") == [(key, 1)]
    assert queued(dbo, "FifoQueue", payload) == 1
    empty(dbo, "FifoQueue")
    assert counts(dbo, "FifoQueue") == []  # the receive that drained it cleared the count


def test_consumers_record_failures_admins_handle_letters_and_monitors_count_them(member, dbo: Any) -> None:
    empty(dbo, "FifoQueue")
    set_max(dbo, "FifoQueue", 1)
    try:
        worker = member("QueueWorker")()
        admin = member("QueueAdmin")()
        monitor = member("QueueMonitor")()
        payload = send(dbo, "FifoQueue")
        _, result = fail_once(worker, "FifoQueue", "poison")  # the worker's receive and failure
        dead_letter_id = result["DeadLetterId"]
        assert dead_letter_id is not None
    finally:
        set_max(dbo, "FifoQueue", None)

    listed = db.query(admin.cursor(), "SELECT DeadLetterId, Kind, PayloadBytes, Error FROM dbo.DeadLetter_V "
                                      "WHERE DeadLetterId = ?;", dead_letter_id)
    assert listed == [(dead_letter_id, "FifoQueue", 8, "poison")]
    assert db.query(monitor.cursor(), "SELECT DeadLetters FROM dbo.DeadLetterCount_V "
                                      "WHERE Kind = 'FifoQueue';")[0][0] >= 1
    for conn, sql in ((worker, "SELECT TOP (1) DeadLetterId FROM dbo.DeadLetter_V;"),
                      (worker, f"EXEC dbo.Replay_DeadLetter_trx @DeadLetterId = {dead_letter_id};"),
                      (monitor, "SELECT TOP (1) DeadLetterId FROM dbo.DeadLetter_V;"),
                      (monitor, f"EXEC dbo.Delete_DeadLetter_trx @DeadLetterId = {dead_letter_id};"),
                      (admin, "EXEC dbo.Fail_FifoQueue_trx @Id = 1, @Error = N'';"),
                      (admin, "SELECT TOP (1) MessageKey FROM dbo.MessageFailure;"),
                      (admin, "SELECT TOP (1) DeadLetterId FROM dbo.DeadLetter;")):
        with pytest.raises(db.SqlError) as refused:
            db.query(conn.cursor(), sql)
        assert refused.value.number == 229, str(refused.value)  # the permission was denied
    replayed = rows(db.call(admin, "dbo.Replay_DeadLetter_trx", DeadLetterId=dead_letter_id))
    assert replayed[0]["Kind"] == "FifoQueue"  # the send under it needs no producer's grant
    assert queued(dbo, "FifoQueue", payload) == 1
    empty(dbo, "FifoQueue")


def test_the_dashboard_store_lists_counts_replays_and_deletes_letters(queues: str, dbo: Any) -> None:
    """SqlStore's reads and actions of the dead letters' page, as the dashboard sends them."""
    from relq.dashboard.store import LetterPage, SqlStore

    empty(dbo, "FifoQueue")
    set_max(dbo, "FifoQueue", 1)
    try:
        payloads = [send(dbo, "FifoQueue") for _ in range(3)]
        ids = [fail_once(dbo, "FifoQueue", f"poison {n}")[1]["DeadLetterId"] for n in range(3)]
    finally:
        set_max(dbo, "FifoQueue", None)
    store = SqlStore(lambda: db.connect(queues))
    try:
        newest = store.dead_letters(LetterPage(), 2)
        assert [r["DeadLetterId"] for r in newest] == [ids[2], ids[1]]  # the newest: made just now
        top = newest[0]
        shown = (top["Kind"], top["DeliveryCount"], top["Error"], top["PayloadBytes"])
        assert shown == ("FifoQueue", 1, "poison 2", 8)
        older = store.dead_letters(LetterPage(after=ids[1]), 1)
        assert [r["DeadLetterId"] for r in older] == [ids[0]]
        newer = store.dead_letters(LetterPage(before=ids[0]), 2)
        assert [r["DeadLetterId"] for r in newer] == [ids[2], ids[1]]  # read the other way, newest first
        fifo = [c for c in store.dead_letter_counts() if c["Kind"] == "FifoQueue"]
        assert fifo and fifo[0]["DeadLetters"] >= 3
        replayed = store.replay_dead_letter(ids[2])
        assert replayed["Kind"] == "FifoQueue" and replayed["MessageKey"] is not None
        store.delete_dead_letter(ids[1])
        with pytest.raises(db.SqlError) as refused:
            store.delete_dead_letter(ids[2])
        assert refused.value.number == Msg.DeadLetterGone
        assert db.call(dbo, "dbo.Delete_DeadLetter_trx", DeadLetterId=ids[0]).return_code == 0
        assert [queued(dbo, "FifoQueue", p) for p in payloads] == [0, 0, 1]
    finally:
        store.close()
        empty(dbo, "FifoQueue")
