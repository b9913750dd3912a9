"""The producers scenario: ``producers`` client processes enqueue through the queue's own
procedures while 1, 8 and 32 consumers (``consumers``) take the work, on the relational
queue and on the FIFO and transport queues. It loads the enqueue path (the feeder of
bench.workers writes its rows set-based, beside the procedures) and measures, per arm:

- what moved: items produced and consumed, and their rates over the slowest client's
  timed seconds; the ratios of each over the first arm's (8 and 32 consumers over 1);
- PAGELATCH_% waits (bench.load: server-wide) during the arm;
- lock promotions on the queue's tables (bench.load), which fail the arm: a producer or
  consumer whose statement escalated to a table lock stalls every other;
- deadlock victims (1205) in the clients' calls, repeated and counted.

The queues and their calls:
- SyncQueue: a producer calls dbo.Add_SyncQueue_trx with one item (an @Items of one row,
  dbo.SyncQueueItemList: a type of dbo.SyncQueueType, an EntityKey of its own); a
  consumer claims with dbo.Next_SyncQueue_trx (@WaitMs = 0) and reports Completed with
  dbo.Modify_SyncQueue_trx, as bench.workers' batch-1 worker does.
- FifoQueue: dbo.Send_FifoQueue_trx and dbo.Receive_FifoQueue_trx (one message a call).
- TransportMessage: dbo.Send_TransportMessage_trx and dbo.Receive_TransportMessage_trx on
  one transport queue declared with dbo.Add_TransportQueue_trx, messages without expiry.
Each arm starts from an empty queue (its table emptied before it), so that an arm does
not inherit the backlog the one before left; what the arm consumes is what its
producers wrote, warm-up included. After each arm the harness checks that every item
is accounted for: SyncQueue holds as many items as were produced, as many Completed as
were consumed and none Processing; a message queue holds as many as were sent and not
received.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from bench import load
from bench.load import LoadArm, LoadResult, Role, Run
from bench.stats import ratio
from bench.workers import Arm, checked, cycle
from relq import db
from relq.errors import RelqError

ENDPOINT = "relq-bench"  # the transport queue the arms send to and receive from

ADD_SYNC = """
SET NOCOUNT ON;
DECLARE @rc INT;
DECLARE @Items dbo.SyncQueueItemList;
INSERT INTO @Items (ItemNo, [Type], EntityKey) VALUES (1, ?, ?);
EXEC @rc = dbo.Add_SyncQueue_trx @Items = @Items;
SELECT @rc AS return_code;
"""
FIRST_TYPE = "SELECT MIN(t.[Type]) FROM dbo.SyncQueueType AS t;"
SYNC_COUNTS = """
SELECT
    COUNT_BIG(*),
    COUNT_BIG(CASE WHEN q.[Status] = 'Completed' THEN 1 END),
    COUNT_BIG(CASE WHEN q.[Status] = 'Processing' THEN 1 END)
FROM dbo.SyncQueue AS q;
"""


# -- the clients' actions (built in each client process by bench.load) -------------------------------


class _Action:
    def __init__(self) -> None:
        self.ledger: list[Any] = []


class AddSync(_Action):
    """One dbo.Add_SyncQueue_trx of one item a step."""

    def __init__(self, conn: Any, role: Role, slot: int) -> None:
        super().__init__()
        self.cursor = conn.cursor()
        self.type = db.query(self.cursor, FIRST_TYPE)[0][0]
        self.slot, self.n = slot, 0

    def step(self, retry: Any) -> int:
        self.n += 1
        key = f"bench-producer-{self.slot}-{self.n}"
        sets, _ = retry(
            lambda: db.result_sets(self.cursor, ADD_SYNC, self.type, key, context="dbo.Add_SyncQueue_trx")
        )
        if sets[-1][0][0] != 0 or len(sets) != 2 or len(sets[0]) != 1:
            raise RelqError(
                f"dbo.Add_SyncQueue_trx returned {sets[-1][0][0]} with {len(sets) - 1} result set(s)"
            )
        return 1


class TakeSync(_Action):
    """A claim (dbo.Next_SyncQueue_trx) and its Completed report (dbo.Modify_SyncQueue_trx)."""

    def __init__(self, conn: Any, role: Role, slot: int) -> None:
        super().__init__()
        self.claim, report = cycle(
            conn, Arm(label="producers", queue="SyncQueue", workers=1), f"bench/c{slot}"
        )
        assert report is not None
        self.report = report

    def step(self, retry: Any) -> int:
        rows = self.claim()
        if rows:
            retry(lambda: self.report(rows))
        return len(rows)


class Call(_Action):
    """One call of a message queue's procedure a step; the rows it returned are the items
    it moved (a receive), or one (a send)."""

    def __init__(self, conn: Any, role: Role, slot: int) -> None:
        super().__init__()
        self.conn, self.procedure = conn, role.param("procedure")
        self.params: dict[str, Any] = dict(role.param("args", ()))
        self.sends = self.procedure.startswith("dbo.Send_")

    def step(self, retry: Any) -> int:
        params = {
            **self.params,
            **({"Body" if "Transport" in self.procedure else "Payload": b"bench"} if self.sends else {}),
        }
        rows = retry(lambda: checked(db.call(self.conn, self.procedure, **params), self.procedure))
        return 1 if self.sends else len(rows)


def add_sync(conn: Any, role: Role, slot: int) -> AddSync:
    return AddSync(conn, role, slot)


def take_sync(conn: Any, role: Role, slot: int) -> TakeSync:
    return TakeSync(conn, role, slot)


def call(conn: Any, role: Role, slot: int) -> Call:
    return Call(conn, role, slot)


# -- the queues ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Kind:
    """A queue of the scenario: how it is produced to and consumed from, what empties it."""

    queue: str
    tables: tuple[str, ...]
    empty_sql: str

    def roles(self, producers: int, consumers: int, address: str | None) -> list[Role]:
        if self.queue == "SyncQueue":
            return [
                Role("producer", "bench.producers:add_sync", producers),
                Role("consumer", "bench.producers:take_sync", consumers),
            ]
        args: tuple[tuple[str, Any], ...] = (("Queue", address),) if self.queue == "TransportMessage" else ()
        return [
            Role(
                "producer",
                "bench.producers:call",
                producers,
                (("procedure", f"dbo.Send_{self.queue}_trx"), ("args", args)),
            ),
            Role(
                "consumer",
                "bench.producers:call",
                consumers,
                (("procedure", f"dbo.Receive_{self.queue}_trx"), ("args", (*args, ("BatchSize", 1)))),
            ),
        ]


KINDS = (
    # DELETE, not TRUNCATE: dbo.SyncQueueAttempt references dbo.SyncQueue (its rows go by cascade).
    Kind("SyncQueue", ("SyncQueue", "SyncQueueAttempt"), "DELETE FROM dbo.SyncQueue;"),
    Kind("FifoQueue", ("FifoQueue",), "TRUNCATE TABLE dbo.FifoQueue;"),
    Kind("TransportMessage", ("TransportMessage",), "TRUNCATE TABLE dbo.TransportMessage;"),
)


def accounted(queue: str, produced: int, consumed: int, rows: tuple[int, ...]) -> list[str]:
    """What does not add up after an arm, given what the clients produced and consumed
    (warm-up included) and what the table holds: for SyncQueue (items, Completed,
    Processing), for a message queue (messages left)."""
    problems = []
    if queue == "SyncQueue":
        total, completed, processing = rows
        if total != produced:
            problems.append(f"the producers enqueued {produced:,} items, dbo.SyncQueue holds {total:,}")
        if completed != consumed:
            problems.append(
                f"the consumers completed {consumed:,} items, dbo.SyncQueue shows {completed:,} Completed"
            )
        if processing:
            problems.append(f"{processing:,} item(s) left Processing")
        return problems
    (left,) = rows
    if left != produced - consumed:
        problems.append(
            f"{produced:,} messages sent and {consumed:,} received, but dbo.{queue} holds {left:,} "
            f"(not {produced - consumed:,}): messages were lost or received twice"
        )
    return problems


def arm_of(kind: Kind, label: str, run: Run, rows: tuple[int, ...], clients: dict[str, int]) -> LoadArm:
    """The arm's figures and checks from its clients' tallies and the table's counts."""
    produced, consumed = run.items("producer"), run.items("consumer")
    arm = LoadArm(
        label=label,
        queue=kind.queue,
        clients=clients,
        seconds=max(run.elapsed("producer"), run.elapsed("consumer")),
        counts={
            "produced": produced,
            "consumed": consumed,
            "empty receives": sum(o["empty"] for o in run.of("consumer")),
        },
        rates={"produced": run.per_s("producer"), "consumed": run.per_s("consumer")},
        errors=run.errors(),
        waits=run.waits,
        promotions=run.promotions,
    )
    if produced == 0 or consumed == 0:
        arm.problems.append(
            f"{'nothing was produced' if produced == 0 else 'nothing was consumed'} during the "
            "arm: it measured nothing"
        )
    arm.problems += accounted(
        kind.queue, run.items("producer", warmup=True), run.items("consumer", warmup=True), rows
    )
    if run.errors().get(load.DEADLOCK):
        arm.notes.append(f"{run.errors()[load.DEADLOCK]:,} deadlock victim(s), repeated")
    return arm


def consumer_ratios(kind: Kind, arms: list[LoadArm]) -> list[Any]:
    """Consumed and produced per second with each count of consumers over the first."""
    first, *rest = arms
    found = []
    for arm in rest:
        for what in ("consumed", "produced"):
            found.append(
                ratio(
                    f"{kind.queue}: {what}/s with {arm.clients['consumers']} consumers over "
                    f"{first.clients['consumers']}",
                    (arm.label, arm.rates[what]),
                    (first.label, first.rates[what]),
                )
            )
    return found


def producers(runner: Any, conn_str: str) -> LoadResult:
    """The producers scenario in the throwaway database ``conn_str`` names."""
    s = runner.settings
    result = LoadResult(
        "producers", "Do producers and consumers share the queue without latch convoys or escalated locks?"
    )
    result.notes += load.client_note(s.producers + max(s.consumers), os.cpu_count())
    address = load.rows_of(
        conn_str, "SET NOCOUNT ON; EXEC dbo.Add_TransportQueue_trx @Endpoint = ?;", ENDPOINT
    )[0][0]
    for kind in KINDS:
        arms = []
        for consumers in s.consumers:
            load.rows_of(conn_str, f"SET NOCOUNT ON; {kind.empty_sql} SELECT 1;")
            label = (
                f"{kind.queue}, {s.producers} producers, {consumers} consumer{'s' if consumers > 1 else ''}"
            )
            task = runner.progress.add_task(label, total=1.0)
            try:
                run = load.run_roles(
                    conn_str,
                    kind.roles(s.producers, consumers, address),
                    s.seconds,
                    s.warmup,
                    kind.tables,
                    tick=lambda share, t=task: runner.progress.update(t, completed=share),
                )
            finally:
                runner.progress.remove_task(task)
            sql = SYNC_COUNTS if kind.queue == "SyncQueue" else f"SELECT COUNT_BIG(*) FROM dbo.{kind.queue};"
            rows = tuple(int(v) for v in load.rows_of(conn_str, sql)[0])
            arms.append(arm_of(kind, label, run, rows, {"producers": s.producers, "consumers": consumers}))
        result.arms += arms
        result.ratios += consumer_ratios(kind, arms)
    return result


def counts(text: str) -> tuple[int, ...]:
    """``--consumers``: "1,8,32" -> (1, 8, 32); ValueError (argparse names the option) for
    anything that is not a comma-separated list of integers."""
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if not parts:
        raise ValueError(f"no count in {text!r}")
    return tuple(int(p) for p in parts)
