"""The load scenarios' clients, run in this process against a fake server that speaks
pyodbc's cursor protocol (execute, description, fetchall, nextset): the batches they
send, how they read the result sets back (the procedure's own set first, the batch's
return code last), the ledgers and tallies a client process reports, and the
transportpurge checks on what a right and a wrong server deliver. The processes, the
barrier and SQL Server itself are the live test's (tests/bench/test_live_load.py)."""

from __future__ import annotations

import queue
import threading
from datetime import datetime, timedelta
from typing import Any

import pytest

from bench import load, producers, transport
from bench.load import PromotionDelta, Role, Run, WaitDelta
from relq import db

T0 = datetime(2026, 11, 28, 8, 0, 0)
MESSAGE_COLUMNS = [
    "Id",
    "CorrelationId",
    "ReplyToAddress",
    "Recoverable",
    "Expires",
    "Headers",
    "Body",
    "RowVersion",
]


def _us(when: datetime) -> int:
    return (when - transport.EPOCH) // timedelta(microseconds=1)


class FakeTransport:
    """One transport queue on a fake clock that moves 1 ms a call. ``honest``: a receive
    skips expired messages, as dbo.Receive_TransportMessage_trx does; otherwise it
    delivers them (the bug the scenario must catch)."""

    def __init__(self, honest: bool = True) -> None:
        self.now = T0
        self.honest = honest
        self.rows: list[tuple[int, str, datetime | None]] = []  # (RowVersion, Id, Expires)
        self.version = 0
        self.batches: list[str] = []

    def run(self, sql: str, params: tuple[Any, ...]) -> list[tuple[list[str], list[tuple]]]:
        self.batches.append(sql)
        self.now += timedelta(milliseconds=1)
        if "SET LOCK_TIMEOUT" in sql:
            return []
        if "dbo.Send_TransportMessage_trx @Queue = ?, @Id = ?" in sql:
            in_ms, _queue, message, body = params
            assert body == b"bench"
            expires = None if in_ms is None else self.now + timedelta(milliseconds=in_ms)
            self.version += 1
            self.rows.append((self.version, message.upper(), expires))  # pyodbc: GUIDs as upper-case text
            return [(["Id"], [(message.upper(),)]), (["return_code", "Expires"], [(0, expires)])]
        if "dbo.Receive_TransportMessage_trx @Queue = ?, @BatchSize = ?" in sql:
            _queue, batch = params
            before = self.now
            live = [r for r in self.rows if not self.honest or r[2] is None or r[2] > before][:batch]
            self.rows = [r for r in self.rows if r not in live]
            self.now += timedelta(microseconds=300)
            got = [(i, None, None, True, e, "{}", b"bench", v) for v, i, e in live]
            return [
                (MESSAGE_COLUMNS, got),
                (["return_code", "BeforeUs", "AfterUs"], [(0, _us(before), _us(self.now))]),
            ]
        if "dbo.Purge_TransportMessage_trx" in sql:
            expired = [r for r in self.rows if r[2] is not None and r[2] <= self.now]
            self.rows = [r for r in self.rows if r not in expired]
            return [(["Purged"], [(len(expired),)]), (["return_code"], [(0,)])]
        raise AssertionError(sql)


class FakeCursor:
    def __init__(self, server: Any) -> None:
        self.server = server
        self.sets: list[tuple[list[str], list[tuple]]] = []

    def execute(self, sql: str, *params: Any) -> FakeCursor:
        self.sets = self.server.run(sql, params)
        return self

    @property
    def description(self) -> list[tuple] | None:
        return [(c, None) for c in self.sets[0][0]] if self.sets else None

    def fetchall(self) -> list[tuple]:
        return list(self.sets[0][1])

    def nextset(self) -> bool:
        self.sets = self.sets[1:]
        return bool(self.sets)

    def close(self) -> None:
        pass


class FakeConnection:
    timeout = 0

    def __init__(self, server: Any) -> None:
        self.server = server

    def cursor(self) -> FakeCursor:
        return FakeCursor(self.server)

    def close(self) -> None:
        pass


def _client(monkeypatch: pytest.MonkeyPatch, server: Any, role: Role, seconds: float) -> dict[str, Any]:
    """One client process's work, in this process: its dict as the parent gets it."""
    monkeypatch.setattr(db, "connect", lambda conn_str, **_: FakeConnection(server))
    monkeypatch.setattr(load.signal, "signal", lambda *a: None)
    results: queue.Queue = queue.Queue()
    load.client("fake", role, 0, seconds, 0.0, threading.Barrier(1), results)
    out = results.get_nowait()
    assert "error" not in out, out
    return out


def _transport_run(monkeypatch: pytest.MonkeyPatch, server: FakeTransport) -> tuple[Run, list, datetime]:
    """A sender for a while; a receiver; two and a half seconds later a purge; then the drain."""
    sender, receiver, purge = transport.roles("relq-bench-rcsi-off")
    sent = _client(monkeypatch, server, sender, 0.05)
    got = _client(monkeypatch, server, receiver, 0.05)
    server.now += timedelta(milliseconds=2_500)
    purged = _client(monkeypatch, server, purge, 0.01)
    drained, drained_at = transport.drain("fake", "relq-bench-rcsi-off")
    outs = [sent, got, purged]
    return Run(outs, WaitDelta({}), PromotionDelta({"TransportMessage": 0})), drained, drained_at


def test_the_transport_clients_against_a_right_server_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    server = FakeTransport()
    run, drained, drained_at = _transport_run(monkeypatch, server)
    sent, got, purged = run.outs
    assert sent["items"] > 4 and got["items"] >= 1 and purged["items"] > 0
    assert len(sent["ledger"]) == sent["items"] and sent["ledger"][0][0] == sent["ledger"][0][0].lower()
    assert all("SET LOCK_TIMEOUT 2000;" in b for b in server.batches[:1])
    arm, checked = transport.arm_of("RCSI OFF", run, drained, drained_at)
    assert arm.failures() == [], arm.failures()
    # Every message was received once or purged after its expiry; the far and the never ones by the drain.
    assert checked.received + checked.expired_unreceived == checked.sent
    assert checked.expired_unreceived == purged["items"] and drained


def test_the_transport_clients_catch_a_server_that_delivers_expired_messages(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server = FakeTransport(honest=False)
    sender, receiver, _ = transport.roles("q")
    sent = _client(monkeypatch, server, sender, 0.05)
    server.now += timedelta(milliseconds=2_500)  # every short message has expired
    got = _client(monkeypatch, server, receiver, 0.05)
    drained, drained_at = transport.drain("fake", "q")
    run = Run([sent, got], WaitDelta({}), PromotionDelta({"TransportMessage": 0}))
    arm, checked = transport.arm_of("RCSI ON", run, drained, drained_at)
    assert checked.expired and any("expired message(s) delivered" in p for p in arm.failures())


class FakeQueues:
    """Add_SyncQueue_trx, and Send_/Receive_ of a message queue, as the clients call them."""

    def __init__(self) -> None:
        self.items: list[str] = []
        self.calls: list[tuple[str, tuple]] = []

    def run(self, sql: str, params: tuple[Any, ...]) -> list[tuple[list[str], list[tuple]]]:
        self.calls.append((sql, params))
        if "SELECT MIN(t.[Type]) FROM dbo.SyncQueueType" in sql:
            return [(["Type"], [("CustomerSync",)])]
        if "EXEC @rc = dbo.Add_SyncQueue_trx @Items = @Items;" in sql:
            self.items.append(params[1])
            return [
                (
                    ["EnqueuedAt", "Type", "EntityKey", "ItemNo", "IsDuplicate"],
                    [(T0, params[0], params[1], 1, 0)],
                ),
                (["return_code"], [(0,)]),
            ]
        if "dbo.Send_FifoQueue_trx" in sql:
            self.items.append("m")
            return [(["Id"], [(len(self.items),)]), (["return_code"], [(0,)])]
        if "dbo.Receive_FifoQueue_trx" in sql:
            got = [(1, b"m", T0)] if self.items else []
            self.items = self.items[1:]
            return [(["Id", "Payload", "EnqueuedAt"], got), (["return_code"], [(0,)])]
        raise AssertionError(sql)


def test_a_syncqueue_producer_adds_one_item_of_its_own_a_call(monkeypatch: pytest.MonkeyPatch) -> None:
    server = FakeQueues()
    sync = producers.KINDS[0]
    out = _client(monkeypatch, server, sync.roles(8, 1, None)[0], 0.02)
    assert out["items"] == len(server.items) > 0
    assert len(set(server.items)) == len(server.items)  # an EntityKey each
    assert all(p[0] == "CustomerSync" for s, p in server.calls if "Add_SyncQueue_trx" in s)


def test_a_fifo_producer_and_consumer_move_what_they_count(monkeypatch: pytest.MonkeyPatch) -> None:
    server = FakeQueues()
    send, receive = producers.KINDS[1].roles(8, 1, None)
    sent = _client(monkeypatch, server, send, 0.02)
    got = _client(monkeypatch, server, receive, 0.5)  # 25 times what it takes here: room on a busy CI
    assert sent["items"] > 0 and got["items"] == sent["items"] and got["empty"] > 0
    assert any("@Payload = ?" in s and p == (b"bench",) for s, p in server.calls)
    assert any("@BatchSize = ?" in s and p == (1,) for s, p in server.calls)


def test_an_add_that_returns_no_row_ends_the_producer(monkeypatch: pytest.MonkeyPatch) -> None:
    class Silent(FakeQueues):
        def run(self, sql: str, params: tuple[Any, ...]) -> list[tuple[list[str], list[tuple]]]:
            sets = super().run(sql, params)
            return [sets[-1]] if "Add_SyncQueue_trx" in sql else sets

    monkeypatch.setattr(db, "connect", lambda conn_str, **_: FakeConnection(Silent()))
    monkeypatch.setattr(load.signal, "signal", lambda *a: None)
    results: queue.Queue = queue.Queue()
    load.client("fake", producers.KINDS[0].roles(1, 1, None)[0], 3, 0.02, 0.0, threading.Barrier(1), results)
    assert "dbo.Add_SyncQueue_trx returned 0 with 0 result set(s)" in results.get_nowait()["error"]
