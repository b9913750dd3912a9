SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* QueueProducer: enqueues: the Add_ and Send_ procedures, and the list types they take.
   Least privilege: no grant on a table, so a member reads and writes queue
   rows only through the procedures and views (their owner's rights carry the
   access: ownership chaining). GRANT is idempotent: deploying twice changes nothing. */
IF DATABASE_PRINCIPAL_ID(N'QueueProducer') IS NULL
    BEGIN
        CREATE ROLE QueueProducer AUTHORIZATION dbo;
    END;
GO
GRANT EXECUTE ON OBJECT::dbo.Add_Notification_ResetPassword_trx TO QueueProducer;
GRANT EXECUTE ON OBJECT::dbo.Add_Notification_ResetPassword_utx TO QueueProducer;
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
