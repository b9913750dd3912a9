"""Sync jobs for the live tests, enqueued as an application enqueues them."""

from __future__ import annotations

from relq import db


def enqueue_jobs(conn, job_type: str, *entities: str) -> None:
    """One SyncQueue item of ``job_type`` per entity key, in one Add_SyncQueue_trx call."""
    values = ", ".join(f"({n}, '{job_type}', N'{entity}')" for n, entity in enumerate(entities, start=1))
    db.run_batch(conn.cursor(), f"""
        SET NOCOUNT ON;
        DECLARE @Items dbo.SyncQueueItemList;
        INSERT INTO @Items (ItemNo, [Type], EntityKey) VALUES {values};
        EXEC dbo.Add_SyncQueue_trx @Items = @Items;
    """)
