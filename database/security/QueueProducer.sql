SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* QueueProducer: enqueues: the Add_ and Send_ procedures, the list types they take,
   and the job types a producer names (reference rows). Each relational queue's
   grants are in <Queue>.grants.sql; here are the transport queues' and the Add_
   procedures written by hand (Notification's).
   Least privilege: no grant on a queue table, so a member reads and writes
   queue rows only through the procedures and views (their owner's rights carry the
   access: ownership chaining). GRANT is idempotent: deploying twice changes nothing. */
IF DATABASE_PRINCIPAL_ID(N'QueueProducer') IS NULL
    BEGIN
        CREATE ROLE QueueProducer AUTHORIZATION dbo;
    END;
GO
GRANT EXECUTE ON OBJECT::dbo.Add_Notification_ResetPassword_Batch_trx TO QueueProducer;
GRANT EXECUTE ON OBJECT::dbo.Add_Notification_ResetPassword_Batch_utx TO QueueProducer;
GRANT EXECUTE ON TYPE::dbo.Notification_ResetPasswordItemList TO QueueProducer;
GRANT EXECUTE ON OBJECT::dbo.Add_Notification_ResetPassword_trx TO QueueProducer;
GRANT EXECUTE ON OBJECT::dbo.Add_Notification_ResetPassword_utx TO QueueProducer;
-- Batches: a producer opens one, enqueues its items with its @BatchID, and seals it.
GRANT EXECUTE ON OBJECT::dbo.Open_QueueBatch_trx TO QueueProducer;
GRANT EXECUTE ON OBJECT::dbo.Seal_QueueBatch_trx TO QueueProducer;
GRANT SELECT ON OBJECT::dbo.QueueBatch_V TO QueueProducer;
GRANT EXECUTE ON OBJECT::dbo.Send_FifoQueue_trx TO QueueProducer;
GRANT EXECUTE ON OBJECT::dbo.Send_FifoQueue_utx TO QueueProducer;
GRANT EXECUTE ON OBJECT::dbo.Send_HeapQueue_trx TO QueueProducer;
GRANT EXECUTE ON OBJECT::dbo.Send_HeapQueue_utx TO QueueProducer;
GRANT EXECUTE ON OBJECT::dbo.Send_LifoStack_trx TO QueueProducer;
GRANT EXECUTE ON OBJECT::dbo.Send_LifoStack_utx TO QueueProducer;
GRANT EXECUTE ON OBJECT::dbo.Send_PendingQueue_trx TO QueueProducer;
GRANT EXECUTE ON OBJECT::dbo.Send_PendingQueue_utx TO QueueProducer;
GRANT EXECUTE ON OBJECT::dbo.Send_StrictFifoQueue_trx TO QueueProducer;
GRANT EXECUTE ON OBJECT::dbo.Send_StrictFifoQueue_utx TO QueueProducer;
GRANT EXECUTE ON OBJECT::dbo.Send_TransportMessage_trx TO QueueProducer;
GRANT EXECUTE ON OBJECT::dbo.Send_TransportMessage_utx TO QueueProducer;
GO
-- The enqueue, a Pending report and a retry declare a dbo.ItemKeyList inside
-- (dbo.Lock_ItemKeys_utx's argument). Ownership chaining carries DML and EXEC, and
-- declaring a variable of a table type takes EXECUTE on the type
-- (User-Defined Table Types, Security:
-- https://learn.microsoft.com/previous-versions/sql/sql-server-2008-r2/bb522526(v=sql.105)):
-- granted, so that a member's call cannot fail on it. It gives no access to any data.
GRANT EXECUTE ON TYPE::dbo.ItemKeyList TO QueueProducer;
GO
