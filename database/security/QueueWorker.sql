SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* QueueWorker: works on items: claims, leases, reports, receives, the worker
   views, the outcome list types, and declaring its transport queues.
   Here the transport queues'; each relational queue's are in <Queue>.grants.sql.
   Least privilege: no grant on a queue table, so a member reads and writes
   queue rows only through the procedures and views (their owner's rights carry the
   access: ownership chaining). GRANT is idempotent: deploying twice changes nothing. */
IF DATABASE_PRINCIPAL_ID(N'QueueWorker') IS NULL
    BEGIN
        CREATE ROLE QueueWorker AUTHORIZATION dbo;
    END;
GO
GRANT EXECUTE ON OBJECT::dbo.Add_TransportQueue_trx TO QueueWorker;
GRANT EXECUTE ON OBJECT::dbo.Add_TransportQueue_utx TO QueueWorker;
GRANT EXECUTE ON OBJECT::dbo.Receive_FifoQueue_trx TO QueueWorker;
GRANT EXECUTE ON OBJECT::dbo.Receive_FifoQueue_utx TO QueueWorker;
GRANT EXECUTE ON OBJECT::dbo.Receive_HeapQueue_trx TO QueueWorker;
GRANT EXECUTE ON OBJECT::dbo.Receive_HeapQueue_utx TO QueueWorker;
GRANT EXECUTE ON OBJECT::dbo.Receive_LifoStack_trx TO QueueWorker;
GRANT EXECUTE ON OBJECT::dbo.Receive_LifoStack_utx TO QueueWorker;
GRANT EXECUTE ON OBJECT::dbo.Receive_PendingQueue_trx TO QueueWorker;
GRANT EXECUTE ON OBJECT::dbo.Receive_PendingQueue_utx TO QueueWorker;
GRANT EXECUTE ON OBJECT::dbo.Receive_StrictFifoQueue_trx TO QueueWorker;
GRANT EXECUTE ON OBJECT::dbo.Receive_StrictFifoQueue_utx TO QueueWorker;
GRANT EXECUTE ON OBJECT::dbo.Receive_TransportMessage_trx TO QueueWorker;
GRANT EXECUTE ON OBJECT::dbo.Receive_TransportMessage_utx TO QueueWorker;
GO
-- The enqueue, a Pending report and a retry declare a dbo.ItemKeyList inside
-- (dbo.Lock_ItemKeys_utx's argument). Ownership chaining carries DML and EXEC, and
-- declaring a variable of a table type takes EXECUTE on the type
-- (User-Defined Table Types, Security:
-- https://learn.microsoft.com/previous-versions/sql/sql-server-2008-r2/bb522526(v=sql.105)):
-- granted, so that a member's call cannot fail on it. It gives no access to any data.
GRANT EXECUTE ON TYPE::dbo.ItemKeyList TO QueueWorker;
-- Likewise a final report, a control and a claim's clean-up declare a dbo.QueueBatchCountList
-- (dbo.Count_QueueBatch_utx's argument) for the items' batches (docs/batches.md).
GRANT EXECUTE ON TYPE::dbo.QueueBatchCountList TO QueueWorker;
GO
