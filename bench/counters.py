"""Lock waits and deadlocks, from the server's DMVs, before and after an arm.

Both counters are server-wide: they count every session on the instance, not only
the benchmark's, so run the benchmark on a server nothing else uses.
- Lock waits: the sum of waiting_tasks_count over the LCK_M_% waits of
  sys.dm_os_wait_stats (cumulative since the instance started).
- Deadlocks: 'Number of Deadlocks/sec' of the Locks object, instance _Total, in
  sys.dm_os_performance_counters. Despite its name, cntr_value of a per-second counter
  (cntr_type 272696576, PERF_COUNTER_BULK_COUNT) is a cumulative count: the rate is the
  difference of two samples, so the difference is the deadlocks in between.
Reading them needs VIEW SERVER STATE (VIEW SERVER PERFORMANCE STATE on SQL Server
2022); without it the counts are None and the report says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from relq import db

SCOPE = "server-wide: lock waits and deadlocks count every session on the instance, not only the benchmark's"

SNAPSHOT = """
SELECT
    (
        SELECT SUM(w.waiting_tasks_count) FROM sys.dm_os_wait_stats AS w
        WHERE w.wait_type LIKE N'LCK[_]M[_]%'
    ) AS LockWaits,
    (
        SELECT SUM(p.cntr_value) FROM sys.dm_os_performance_counters AS p
        WHERE
            RTRIM(p.[object_name]) LIKE N'%:Locks'
            AND RTRIM(p.counter_name) = N'Number of Deadlocks/sec'
            AND RTRIM(p.instance_name) = N'_Total'
    ) AS Deadlocks;
"""

PRODUCT = """
SELECT
    CAST(SERVERPROPERTY('ProductVersion') AS NVARCHAR(128)),
    CAST(SERVERPROPERTY('Edition') AS NVARCHAR(128)),
    CAST(SERVERPROPERTY('EngineEdition') AS INT);
"""
MACHINE = "SELECT i.cpu_count, i.physical_memory_kb / 1024 FROM sys.dm_os_sys_info AS i;"


@dataclass(frozen=True)
class Snapshot:
    lock_waits: int | None
    deadlocks: int | None


def snapshot(conn: Any) -> Snapshot:
    """The two counters now; None for what this login may not read."""
    cursor = conn.cursor()
    try:
        lock_waits, deadlocks = db.query(cursor, SNAPSHOT)[0]
    except db.SqlError:
        return Snapshot(None, None)
    finally:
        cursor.close()
    return Snapshot(_int(lock_waits), _int(deadlocks))


def delta(before: Snapshot, after: Snapshot) -> Snapshot:
    """What happened between two snapshots (None where either is missing)."""
    def diff(a: int | None, b: int | None) -> int | None:
        return None if a is None or b is None else b - a

    return Snapshot(diff(before.lock_waits, after.lock_waits), diff(before.deadlocks, after.deadlocks))


def server(conn: Any) -> dict[str, Any]:
    """What the server is: version, edition, CPUs and memory (those need VIEW SERVER STATE)."""
    cursor = conn.cursor()
    try:
        version, edition, engine = db.query(cursor, PRODUCT)[0]
        try:
            cpus, memory_mb = db.query(cursor, MACHINE)[0]
        except db.SqlError:
            cpus = memory_mb = None
    finally:
        cursor.close()
    return {"version": version, "edition": edition, "engine_edition": _int(engine), "cpus": _int(cpus),
            "memory_mb": _int(memory_mb)}


def _int(value: Any) -> int | None:
    return None if value is None else int(value)
