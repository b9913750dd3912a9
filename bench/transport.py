"""The transportpurge scenario: dbo.Purge_TransportMessage_trx every PURGE_EVERY_S beside
RECEIVERS receivers and SENDERS senders on one transport queue, half the messages
expiring within 2 s, run twice in one throwaway database: READ_COMMITTED_SNAPSHOT OFF,
then ON. It fails on

- any error 1205 (deadlock victim) or 1222 (lock request time-out) in any client: every
  client session runs SET LOCK_TIMEOUT LOCK_TIMEOUT_MS (a session setting that stays for
  the connection; the default, -1, waits forever:
  https://learn.microsoft.com/sql/t-sql/statements/set-lock-timeout-transact-sql), so a
  call blocked as long as a short message lives fails the run instead of hanging it;
- any unexpired message not received exactly once: senders record each message they
  sent (its Id, chosen by the sender, and its Expires), receivers each message they got;
  after the arm the parent drains the queue (receives of 1,000 until one returns none,
  the senders, receivers and purge stopped) and the drain's messages count as received.
  A message is unexpired when its Expires is NULL or later than the end of the drain's
  last, empty receive (server clock): it was deliverable during that whole call;
- any expired message delivered: received by a call that began (SYSUTCDATETIME() read
  just before the EXEC, in the same batch) at or after its Expires. The procedure reads
  its own @Now after that, so such a delivery broke its Expires > @Now rule. A message
  whose Expires falls inside its receive call (after the call began, by the time it
  ended) may have been deliverable at the procedure's @Now: that is the tolerance, the
  receive call's own duration on the server's clock, and those deliveries are counted
  in the notes, not failed. Every time compared is whole microseconds: Expires is
  computed on the server and rounded to DATETIME2(6) before the send, and the receive's
  bounds are DATEDIFF_BIG microseconds (which truncate), so no comparison depends on how
  the driver rounds DATETIME2(7) (SYSUTCDATETIME: the server's clock, 100 ns precision:
  https://learn.microsoft.com/sql/t-sql/functions/sysutcdatetime-transact-sql).

The senders send as fast as they can, one message a call; each receiver takes one
message a call and waits RECEIVE_PAUSE_S after each, so the receivers take at most 800
messages a second and, on any server that sends faster, a backlog builds in which short
messages expire unreceived: the purge then deletes rows beside receivers reading the
same queue, and receivers meet messages whose expiry has just passed.

Expiry mix, by the sender's message number n: even n expire 100 ms to 2 s after the send
(SHORT_MS), n = 1 mod 4 in an hour (FAR_MS: an unexpired Expires the purge must leave
alone), n = 3 mod 4 never (NULL). Expired messages no receiver took are the purge's.

READ_COMMITTED_SNAPSHOT is set with ALTER DATABASE ... WITH ROLLBACK IMMEDIATE: the
option can change only while the connection running ALTER DATABASE is the only one in
the database, and ROLLBACK IMMEDIATE ends the others (pooled ones included)
(https://learn.microsoft.com/sql/t-sql/statements/alter-database-transact-sql-set-options).
The receive and the purge read with READCOMMITTEDLOCK, so with RCSI ON they still lock;
the second arm checks that the sends' and the FK's reads under row versioning change
nothing.
"""

from __future__ import annotations

import time
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from bench import load
from bench.load import LoadArm, LoadResult, Role
from bench.workers import checked
from relq import db
from relq.errors import RelqError

RECEIVERS = 8
SENDERS = 4
PURGE_EVERY_S = 0.2
SHORT_MS = (100, 2000)  # the short expiries: 100 ms to 2 s after the send
FAR_MS = 3_600_000
LOCK_TIMEOUT_MS = 2000  # as long as a short message lives at most
RECEIVE_PAUSE_S = 0.01  # after each receive: RECEIVERS take at most 800 messages a second
DRAIN_BATCH = 1000
EPOCH = datetime(2000, 1, 1)

SEND = """
SET NOCOUNT ON;
DECLARE @rc INT;
DECLARE @InMs INT = ?;
DECLARE @Expires DATETIME2(7) = CASE
    WHEN @InMs IS NULL THEN NULL
    ELSE CAST(DATEADD(MILLISECOND, @InMs, SYSUTCDATETIME()) AS DATETIME2(6))
END;
EXEC @rc = dbo.Send_TransportMessage_trx @Queue = ?, @Id = ?, @Expires = @Expires, @Body = ?;
SELECT @rc AS return_code, @Expires AS Expires;
"""
RECEIVE = """
SET NOCOUNT ON;
DECLARE @rc INT;
DECLARE @Epoch DATETIME2(7) = '2000-01-01T00:00:00';
DECLARE @Before DATETIME2(7) = SYSUTCDATETIME();
EXEC @rc = dbo.Receive_TransportMessage_trx @Queue = ?, @BatchSize = ?;
SELECT
    @rc AS return_code,
    DATEDIFF_BIG(MICROSECOND, @Epoch, @Before) AS BeforeUs,
    DATEDIFF_BIG(MICROSECOND, @Epoch, SYSUTCDATETIME()) AS AfterUs;
"""
SET_RCSI = "ALTER DATABASE {database} SET READ_COMMITTED_SNAPSHOT {state} WITH ROLLBACK IMMEDIATE;"
RCSI_IS = "SELECT d.is_read_committed_snapshot_on FROM sys.databases AS d WHERE d.name = ?;"


def expiry_ms(n: int) -> int | None:
    """Milliseconds from the send to the expiry of the sender's n-th message (None: never)."""
    if n % 2 == 0:
        low, high = SHORT_MS
        return low + (n * 7919) % (high - low)
    return FAR_MS if n % 4 == 1 else None


# -- the ledgers and their check ------------------------------------------------------------------------


@dataclass(frozen=True)
class Sent:
    id: str
    expires: datetime | None


@dataclass(frozen=True)
class Received:
    id: str
    expires: datetime | None
    before: datetime  # the server's clock before the receive call began
    after: datetime  # and after it returned
    by: str


@dataclass
class Deliveries:
    """What the ledgers show: counts, and the ids of each kind of wrong delivery."""

    sent: int
    received: int
    duplicates: dict[str, int] = field(default_factory=dict)  # id -> times received
    unknown: list[str] = field(default_factory=list)  # received, never sent
    lost: list[str] = field(default_factory=list)  # unexpired, never received
    expired: list[Received] = field(default_factory=list)  # received by a call begun at or after its expiry
    changed: list[str] = field(default_factory=list)  # received with another Expires than sent
    during_call: int = 0  # expired within their receive call: tolerated
    expired_unreceived: int = 0  # expired before the drain ended, not received: the purge's

    def failures(self) -> list[str]:
        found = []
        if self.duplicates:
            found.append(
                f"{len(self.duplicates):,} message(s) received more than once "
                f"(e.g. {_first(self.duplicates)}, {max(self.duplicates.values())} times)"
            )
        if self.unknown:
            found.append(
                f"{len(self.unknown):,} message(s) received that no sender sent (e.g. {self.unknown[0]})"
            )
        if self.lost:
            found.append(f"{len(self.lost):,} unexpired message(s) never received (e.g. {self.lost[0]})")
        if self.expired:
            worst = max(self.expired, key=lambda r: r.before - r.expires if r.expires else timedelta(0))
            late = (worst.before - worst.expires).total_seconds() * 1000 if worst.expires else 0.0
            found.append(
                f"{len(self.expired):,} expired message(s) delivered (e.g. {worst.id} to {worst.by}, "
                f"whose receive began {late:.3f} ms after its expiry)"
            )
        if self.changed:
            found.append(
                f"{len(self.changed):,} message(s) delivered with another Expires than sent "
                f"(e.g. {self.changed[0]})"
            )
        return found

    def as_dict(self) -> dict[str, Any]:
        return {
            "sent": self.sent,
            "received": self.received,
            "duplicates": len(self.duplicates),
            "unknown": len(self.unknown),
            "lost": len(self.lost),
            "expired_delivered": len(self.expired),
            "changed": len(self.changed),
            "expired_during_receive": self.during_call,
            "expired_unreceived": self.expired_unreceived,
        }


def _first(ids: dict[str, int]) -> str:
    return sorted(ids)[0]


def deliveries(sent: Sequence[Sent], received: Sequence[Received], drained_at: datetime) -> Deliveries:
    """Check the ledgers: every message unexpired at ``drained_at`` (the end of the drain's
    last, empty receive) received exactly once, none received by a call begun at or after
    its expiry, none received that was not sent. ValueError when two sends share an Id
    (the senders' Ids are new uuids: that is the harness's bug)."""
    by_id: dict[str, Sent] = {}
    for s in sent:
        if s.id in by_id:
            raise ValueError(f"two messages were sent with the Id {s.id}")
        by_id[s.id] = s
    times = Counter(r.id for r in received)
    result = Deliveries(sent=len(sent), received=len(received))
    result.duplicates = {i: n for i, n in times.items() if n > 1}
    result.unknown = sorted(i for i in times if i not in by_id)
    for s in sent:
        if s.id in times:
            continue
        if s.expires is None or s.expires > drained_at:
            result.lost.append(s.id)
        else:
            result.expired_unreceived += 1
    for r in received:
        if r.id in by_id and by_id[r.id].expires != r.expires:
            result.changed.append(r.id)
        if r.expires is None:
            continue
        if r.expires <= r.before:
            result.expired.append(r)
        elif r.expires <= r.after:
            result.during_call += 1
    return result


def errors_failures(errors: dict[int, int]) -> list[str]:
    """Any 1205 or 1222 in any client fails the arm."""
    names = {load.DEADLOCK: "deadlock victim", load.LOCK_TIMEOUT: "lock request time-out"}
    return [
        f"{n:,} error {number} ({names[number]}) in the clients" for number, n in sorted(errors.items()) if n
    ]


# -- the clients' actions ---------------------------------------------------------------------------------


def _when(microseconds: int) -> datetime:
    return EPOCH + timedelta(microseconds=int(microseconds))


def receive(cursor: Any, queue: str, batch: int, by: str) -> tuple[list[Received], datetime, datetime]:
    """One receive, its messages with the server's clock before and after it."""
    sets, columns = db.result_sets(cursor, RECEIVE, queue, batch, context="dbo.Receive_TransportMessage_trx")
    if not columns or columns[-1][0] != "return_code":
        raise RelqError("dbo.Receive_TransportMessage_trx: no return code came back")
    rc, before_us, after_us = sets[-1][0]
    if rc != 0:
        raise RelqError(f"dbo.Receive_TransportMessage_trx returned {rc}")
    before, after = _when(before_us), _when(after_us)
    rows: list[tuple] = []
    if len(sets) == 2:
        names = [c.lower() for c in columns[0]]
        rows = [dict(zip(names, row, strict=True)) for row in sets[0]]  # type: ignore[misc]
    got = [Received(str(m["id"]).lower(), m["expires"], before, after, by) for m in rows]  # type: ignore[index]
    return got, before, after


class Sender:
    def __init__(self, conn: Any, role: Role, slot: int) -> None:
        self.cursor, self.queue, self.slot = conn.cursor(), role.param("queue"), slot
        self.n = 0
        self.ledger: list[tuple[str, datetime | None]] = []

    def step(self, retry: Any) -> int:
        self.n += 1
        message = str(uuid.uuid4()).lower()
        in_ms = expiry_ms(self.n)
        # The procedure's own result set (the Id) comes first, then the batch's return code and Expires.
        sets, _ = retry(
            lambda: db.result_sets(
                self.cursor,
                SEND,
                in_ms,
                self.queue,
                message,
                b"bench",
                context="dbo.Send_TransportMessage_trx",
            )
        )
        rc, expires = sets[-1][0]
        if rc != 0:
            raise RelqError(f"dbo.Send_TransportMessage_trx returned {rc}")
        self.ledger.append((message, expires))
        return 1


class Receiver:
    def __init__(self, conn: Any, role: Role, slot: int) -> None:
        self.cursor, self.queue, self.who = conn.cursor(), role.param("queue"), f"receiver {slot}"
        self.ledger: list[tuple[str, datetime | None, datetime, datetime, str]] = []

    def step(self, retry: Any) -> int:
        got, _, _ = receive(self.cursor, self.queue, 1, self.who)  # not repeated: a 1205 fails the arm
        self.ledger += [(r.id, r.expires, r.before, r.after, r.by) for r in got]
        time.sleep(RECEIVE_PAUSE_S)
        return len(got)


class Purger:
    """dbo.Purge_TransportMessage_trx, one call every PURGE_EVERY_S."""

    def __init__(self, conn: Any, role: Role, slot: int) -> None:
        self.conn = conn
        self.ledger: list[int] = []
        self.next = time.monotonic()

    def step(self, retry: Any) -> int:
        time.sleep(max(0.0, self.next - time.monotonic()))
        self.next = max(self.next + PURGE_EVERY_S, time.monotonic())
        rows = checked(db.call(self.conn, "dbo.Purge_TransportMessage_trx"), "dbo.Purge_TransportMessage_trx")
        purged = int(rows[0][0])
        self.ledger.append(purged)
        return purged


def sender(conn: Any, role: Role, slot: int) -> Sender:
    return Sender(conn, role, slot)


def receiver(conn: Any, role: Role, slot: int) -> Receiver:
    return Receiver(conn, role, slot)


def purger(conn: Any, role: Role, slot: int) -> Purger:
    return Purger(conn, role, slot)


def roles(queue: str) -> list[Role]:
    params = (("queue", queue),)
    return [
        Role("sender", "bench.transport:sender", SENDERS, params, LOCK_TIMEOUT_MS),
        Role("receiver", "bench.transport:receiver", RECEIVERS, params, LOCK_TIMEOUT_MS),
        Role("purge", "bench.transport:purger", 1, params, LOCK_TIMEOUT_MS),
    ]


# -- the scenario -------------------------------------------------------------------------------------------


def set_rcsi(conn_str: str, on: bool) -> None:
    """READ_COMMITTED_SNAPSHOT of the throwaway database, set from master (so that the
    session running ALTER DATABASE is not in the database itself), checked in sys.databases."""
    name = str(load.rows_of(conn_str, "SELECT DB_NAME();")[0][0])
    conn = db.connect(db.with_database(conn_str, "master"))
    conn.timeout = 0
    try:
        cursor = conn.cursor()
        quoted = "[" + name.replace("]", "]]") + "]"
        db.run_batch(cursor, SET_RCSI.format(database=quoted, state="ON" if on else "OFF"))
        if bool(db.query(cursor, RCSI_IS, name)[0][0]) != on:
            raise RelqError(f"READ_COMMITTED_SNAPSHOT did not turn {'ON' if on else 'OFF'}")
    finally:
        conn.close()


def drain(conn_str: str, queue: str) -> tuple[list[Received], datetime]:
    """Receive what is left until a receive returns none; the end of that receive."""
    conn = db.connect(conn_str)
    conn.timeout = load.QUERY_TIMEOUT_S
    try:
        cursor = conn.cursor()
        db.run_batch(cursor, f"SET LOCK_TIMEOUT {LOCK_TIMEOUT_MS};")
        got: list[Received] = []
        while True:
            batch, _, after = receive(cursor, queue, DRAIN_BATCH, "the drain")
            if not batch:
                return got, after
            got += batch
    finally:
        conn.close()


def arm_of(
    label: str, run: load.Run, drained: list[Received], drained_at: datetime
) -> tuple[LoadArm, Deliveries]:
    sent = [Sent(i, e) for i, e in run.ledger("sender")]
    received = [Received(*entry) for entry in run.ledger("receiver")] + drained
    checked_ = deliveries(sent, received, drained_at)
    purges = run.of("purge")
    arm = LoadArm(
        label=label,
        queue="TransportMessage",
        clients={"senders": SENDERS, "receivers": RECEIVERS, "purge": 1},
        seconds=max(run.elapsed("sender"), run.elapsed("receiver")),
        counts={
            "sent": run.items("sender"),
            "received": run.items("receiver"),
            "purged": run.items("purge", warmup=True),
            "purge calls": sum(o["calls"] for o in purges),
            "drained": len(drained),
        },
        rates={"sent": run.per_s("sender"), "received": run.per_s("receiver")},
        errors=run.errors(),
        waits=run.waits,
        promotions=run.promotions,
    )
    arm.problems += errors_failures(run.errors()) + checked_.failures()
    if run.items("sender") == 0 or run.items("receiver") == 0:
        arm.problems.append("no message was sent or received during the arm: it measured nothing")
    arm.notes.append(
        f"{checked_.sent:,} sent in all, {checked_.received:,} received (the drain's included); "
        f"{checked_.during_call:,} expired during their receive call (tolerated), "
        f"{checked_.expired_unreceived:,} expired unreceived"
    )
    return arm, checked_


def transportpurge(runner: Any, conn_str: str) -> LoadResult:
    """The transportpurge scenario in the throwaway database ``conn_str`` names."""
    s = runner.settings
    result = LoadResult(
        "transportpurge",
        "Does the transport's purge leave receivers and senders alone, with and without RCSI?",
    )
    for on in (False, True):
        state = "ON" if on else "OFF"
        set_rcsi(conn_str, on)
        queue = load.rows_of(
            conn_str,
            "SET NOCOUNT ON; EXEC dbo.Add_TransportQueue_trx @Endpoint = ?;",
            f"relq-bench-rcsi-{state.lower()}",
        )[0][0]
        every = f"a purge every {PURGE_EVERY_S * 1000:.0f} ms"
        label = f"RCSI {state}: {SENDERS} senders, {RECEIVERS} receivers, {every}"
        task = runner.progress.add_task(label, total=1.0)
        try:
            run = load.run_roles(
                conn_str,
                roles(queue),
                s.seconds,
                s.warmup,
                ("TransportMessage",),
                tick=lambda share, t=task: runner.progress.update(t, completed=share),
            )
        finally:
            runner.progress.remove_task(task)
        drained, drained_at = drain(conn_str, queue)
        arm, _ = arm_of(label, run, drained, drained_at)
        result.arms.append(arm)
    return result
