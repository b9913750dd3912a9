SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* QueueMonitor: reads the health of the queues and nothing else.
   Least privilege: no grant on a queue table, so a member reads and writes
   queue rows only through the procedures and views (their owner's rights carry the
   access: ownership chaining). GRANT is idempotent: deploying twice changes nothing. */
IF DATABASE_PRINCIPAL_ID(N'QueueMonitor') IS NULL
    BEGIN
        CREATE ROLE QueueMonitor AUTHORIZATION dbo;
    END;
GO
GRANT SELECT ON OBJECT::dbo.QueueHealth_V TO QueueMonitor;
GRANT SELECT ON OBJECT::dbo.QueueThroughput_V TO QueueMonitor;
-- The batches' progress (their counts; no item's data).
GRANT SELECT ON OBJECT::dbo.QueueBatch_V TO QueueMonitor;
-- What /metrics counts: the attempts' outcomes and durations, and the items' keys, without
-- an attempt's or an item's texts (relq/dashboard/metrics.py).
GRANT SELECT ON OBJECT::dbo.QueueAttemptOutcome_V TO QueueMonitor;
GRANT SELECT ON OBJECT::dbo.QueueItemKey_V TO QueueMonitor;
GO
-- Which queues and types are paused, by whom and why, and their limits (no item's data).
GRANT SELECT ON OBJECT::dbo.QueueControl_V TO QueueMonitor;
GO
