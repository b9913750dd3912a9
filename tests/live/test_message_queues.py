"""The message queues (seeds 002 and 004) against a real SQL Server: concurrent
consumers, destructive reads, and the two transaction modes."""

from __future__ import annotations

import threading
from collections import Counter

import pytest

from relq import db

pytestmark = pytest.mark.mssql

MESSAGES = 2000
CONSUMERS = 8
KINDS = ["HeapQueue", "FifoQueue", "StrictFifoQueue", "LifoStack", "PendingQueue", "TransportMessage"]


QUERY_TIMEOUT_S = 120  # a lock wait that never ends fails the consumer instead of hanging the run
JOIN_TIMEOUT_S = 300


@pytest.fixture(scope="module")
def queues(mssql, live_database: str) -> str:
    """The session's database, with a transport queue declared."""
    conn_str = db.with_database(mssql.conn_str, live_database)
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
    send = ("EXEC dbo.Send_TransportMessage_trx @Queue = 'Orders', @Body = @Payload;"
            if kind == "TransportMessage" else f"EXEC dbo.Send_{kind}_trx @Payload = @Payload;")
    conn = db.connect(conn_str)
    try:
        db.run_batch(conn.cursor(), f"""
            SET NOCOUNT ON;
            DECLARE @N INT = 1;
            DECLARE @Payload VARBINARY(MAX);
            WHILE @N <= {count}
            BEGIN
                SET @Payload = CAST(@N AS VARBINARY(4));
                {send}
                SET @N += 1;
            END;""")
    finally:
        conn.close()


def number(row: tuple, kind: str) -> int:
    """The payload of a received row, as the number it was sent as."""
    columns = {"HeapQueue": 0, "PendingQueue": 2, "TransportMessage": 6}
    return int.from_bytes(bytes(row[columns.get(kind, 1)]), "big")


def receive(conn_str: str, kind: str, out: list, errors: list) -> None:
    """A consumer: at-most-once receives of up to 10 messages until the queue is empty."""
    conn = db.connect(conn_str)
    conn.timeout = QUERY_TIMEOUT_S
    params = {"Queue": "Orders"} if kind == "TransportMessage" else {}
    try:
        while True:
            rows = db.call(conn, f"dbo.Receive_{kind}_trx", BatchSize=10, **params).result_sets[0]
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
    params = {"Queue": "Orders"} if kind == "TransportMessage" else {}
    first = db.connect(queues)
    with pytest.raises(RuntimeError, match="the consumer fails"), db.transaction(first):
        taken = db.call(first, f"dbo.Receive_{kind}_utx", **params).result_sets[0]
        assert [number(r, kind) for r in taken] == [1]
        raise RuntimeError("the consumer fails before it commits")
    first.close()
    second = db.connect(queues)
    again = db.call(second, f"dbo.Receive_{kind}_trx", **params).result_sets[0]
    second.close()
    assert [number(r, kind) for r in again] == [1]
