"""The message queues (seeds 002 and 004) against a real SQL Server: concurrent
consumers, destructive reads, and the two transaction modes."""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass, field

import pytest

from relq import db

pytestmark = pytest.mark.mssql

MESSAGES = 2000
CONSUMERS = 8


@dataclass(frozen=True)
class Kind:
    """A kind of message queue: its procedures, named in full."""

    send: str  # a statement that sends @Payload
    receive: str
    receive_utx: str
    payload: int = 1  # the column of a received row that holds the payload
    params: dict[str, str] = field(default_factory=dict)  # what a receive takes besides @BatchSize


KINDS = {
    "HeapQueue": Kind("EXEC dbo.Send_HeapQueue_trx @Payload = @Payload;", "dbo.Receive_HeapQueue_trx",
                      "dbo.Receive_HeapQueue_utx", payload=0),
    "FifoQueue": Kind("EXEC dbo.Send_FifoQueue_trx @Payload = @Payload;", "dbo.Receive_FifoQueue_trx",
                      "dbo.Receive_FifoQueue_utx"),
    "StrictFifoQueue": Kind("EXEC dbo.Send_StrictFifoQueue_trx @Payload = @Payload;",
                            "dbo.Receive_StrictFifoQueue_trx", "dbo.Receive_StrictFifoQueue_utx"),
    "LifoStack": Kind("EXEC dbo.Send_LifoStack_trx @Payload = @Payload;", "dbo.Receive_LifoStack_trx",
                      "dbo.Receive_LifoStack_utx"),
    "PendingQueue": Kind("EXEC dbo.Send_PendingQueue_trx @Payload = @Payload;",
                         "dbo.Receive_PendingQueue_trx", "dbo.Receive_PendingQueue_utx", payload=2),
    "TransportMessage": Kind("EXEC dbo.Send_TransportMessage_trx @Queue = 'Orders', @Body = @Payload;",
                             "dbo.Receive_TransportMessage_trx", "dbo.Receive_TransportMessage_utx",
                             payload=6, params={"Queue": "Orders"}),
}


QUERY_TIMEOUT_S = 120  # a lock wait that never ends fails the consumer instead of hanging the run
JOIN_TIMEOUT_S = 300


@pytest.fixture(scope="module", params=["live_database", "rcsi_database"], ids=["rcsi-off", "rcsi-on"])
def queues(request: pytest.FixtureRequest, mssql) -> str:
    """A session's database, with a transport queue declared: every test of this module
    runs with READ_COMMITTED_SNAPSHOT off and on."""
    conn_str = db.with_database(mssql.conn_str, request.getfixturevalue(request.param))
    conn = db.connect(conn_str)
    try:
        assert db.call(conn, "dbo.Add_TransportQueue_trx", Endpoint="Orders").return_code == 0
    finally:
        conn.close()
    return conn_str


def join_all(threads: list[threading.Thread]) -> None:
    for t in threads:
        t.join(timeout=JOIN_TIMEOUT_S)
    assert not any(t.is_alive() for t in threads), "a consumer is still running"


def send_all(conn_str: str, kind: str, count: int) -> None:
    """count messages whose payloads are the numbers 1..count, in order, in one batch."""
    conn = db.connect(conn_str)
    try:
        db.run_batch(conn.cursor(), f"""
            SET NOCOUNT ON;
            DECLARE @N INT = 1;
            DECLARE @Payload VARBINARY(MAX);
            WHILE @N <= {count}
            BEGIN
                SET @Payload = CAST(@N AS VARBINARY(4));
                {KINDS[kind].send}
                SET @N += 1;
            END;""")
    finally:
        conn.close()


def number(row: tuple, kind: str) -> int:
    """The payload of a received row, as the number it was sent as."""
    return int.from_bytes(bytes(row[KINDS[kind].payload]), "big")


def receive(conn_str: str, kind: str, out: list, errors: list) -> None:
    """A consumer: at-most-once receives of up to 10 messages until the queue is empty."""
    conn = db.connect(conn_str)
    conn.timeout = QUERY_TIMEOUT_S
    try:
        while True:
            rows = db.call(conn, KINDS[kind].receive, BatchSize=10, **KINDS[kind].params).result_sets[0]
            if not rows:
                return
            out.extend(number(r, kind) for r in rows)
    except Exception as exc:  # reported by the test
        errors.append(repr(exc))
    finally:
        conn.close()


@pytest.mark.parametrize("kind", KINDS)
def test_eight_consumers_receive_every_message_exactly_once(queues: str, kind: str) -> None:
    send_all(queues, kind, MESSAGES)
    received: list[int] = []
    errors: list[str] = []
    threads = [threading.Thread(target=receive, args=(queues, kind, received, errors))
               for _ in range(CONSUMERS)]
    for t in threads:
        t.start()
    join_all(threads)
    assert errors == []
    assert Counter(received) == Counter(range(1, MESSAGES + 1))


def test_strict_fifo_delivers_in_order_under_concurrency(queues: str) -> None:
    send_all(queues, "StrictFifoQueue", 500)
    delivered: list[int] = []
    errors: list[str] = []

    def consume() -> None:
        conn = db.connect(queues)
        conn.timeout = QUERY_TIMEOUT_S
        try:
            while True:
                with db.transaction(conn):
                    rows = db.call(conn, "dbo.Receive_StrictFifoQueue_utx").result_sets[0]
                    if not rows:
                        return
                    delivered.append(number(rows[0], "StrictFifoQueue"))  # before the commit
        except Exception as exc:  # reported by the test
            errors.append(repr(exc))
        finally:
            conn.close()

    threads = [threading.Thread(target=consume) for _ in range(CONSUMERS)]
    for t in threads:
        t.start()
    join_all(threads)
    assert errors == []
    assert delivered == list(range(1, 501))


@pytest.mark.parametrize("kind", KINDS)
def test_a_rolled_back_receive_leaves_the_message_for_another_consumer(queues: str, kind: str) -> None:
    send_all(queues, kind, 1)
    first = db.connect(queues)
    with pytest.raises(RuntimeError, match="the consumer fails"), db.transaction(first):
        taken = db.call(first, KINDS[kind].receive_utx, **KINDS[kind].params).result_sets[0]
        assert [number(r, kind) for r in taken] == [1]
        raise RuntimeError("the consumer fails before it commits")
    first.close()
    second = db.connect(queues)
    again = db.call(second, KINDS[kind].receive, **KINDS[kind].params).result_sets[0]
    second.close()
    assert [number(r, kind) for r in again] == [1]


EXPIRING = """
SET NOCOUNT ON;
DECLARE @N INT = 1;
DECLARE @Expires DATETIME2(7) = DATEADD(SECOND, 1, SYSUTCDATETIME());
WHILE @N <= 5
BEGIN
    EXEC dbo.Send_TransportMessage_trx @Queue = 'PurgeTest', @Expires = @Expires, @Body = 0x01;
    SET @N += 1;
END;
SET @Expires = DATEADD(HOUR, 1, SYSUTCDATETIME());
EXEC dbo.Send_TransportMessage_trx @Queue = 'PurgeTest', @Expires = @Expires, @Body = 0x02;
EXEC dbo.Send_TransportMessage_trx @Queue = 'PurgeTest', @Body = 0x03;
WAITFOR DELAY '00:00:02';
"""


def test_a_transport_purge_deletes_the_expired_messages_in_batches_and_keeps_the_rest(queues: str) -> None:
    """Five messages that expire a second after they are sent (a message cannot be sent
    already expired), one that expires in an hour and one that never does, in a queue
    of this test's own; the purge takes transactions of two."""
    conn = db.connect(queues)
    try:
        cursor = conn.cursor()
        assert db.call(conn, "dbo.Add_TransportQueue_trx", Endpoint="PurgeTest").return_code == 0
        db.call(conn, "dbo.Purge_TransportMessage_trx")  # whatever expired before this test is not its count
        db.run_batch(cursor, EXPIRING)
        held = "SELECT Body FROM dbo.TransportMessage WHERE Queue = 'PurgeTest' ORDER BY [RowVersion];"
        assert [bytes(b) for (b,) in db.query(cursor, held)] == [b"\x01"] * 5 + [b"\x02", b"\x03"]

        purged = db.call(conn, "dbo.Purge_TransportMessage_trx", BatchSize=2)
        assert (purged.return_code, purged.columns[0], purged.result_sets[0]) == (0, ["Purged"], [(5,)])
        assert [bytes(b) for (b,) in db.query(cursor, held)] == [b"\x02", b"\x03"]
        assert db.query(cursor, "SELECT COUNT(*) FROM dbo.TransportMessage "
                                "WHERE Expires <= SYSUTCDATETIME();") == [(0,)]
        assert db.call(conn, "dbo.Purge_TransportMessage_trx", BatchSize=2).result_sets[0] == [(0,)]
        for size in (0, 4001):
            with pytest.raises(db.SqlError) as refused:
                db.call(conn, "dbo.Purge_TransportMessage_trx", BatchSize=size)
            assert refused.value.number == 735707, str(refused.value)

        # What the purge kept is still delivered, oldest first; the queue is left empty.
        received = db.call(conn, "dbo.Receive_TransportMessage_trx", Queue="PurgeTest", BatchSize=10)
        assert [bytes(row[6]) for row in received.result_sets[0]] == [b"\x02", b"\x03"]
    finally:
        conn.close()
