SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* What the queue roles may do with the message queues' failure counts and dead letters:
   a consumer (QueueWorker, which receives) records its failures (dbo.Fail_<Kind>_trx);
   QueueAdmin lists the dead letters, replays and deletes them; QueueMonitor reads how
   many there are. The roles are created in their own files; no grant is on
   dbo.MessageFailure or dbo.DeadLetter (see QueueWorker.sql): a replay sends through
   the kind's Send_<Kind>_utx by ownership chaining, so QueueAdmin needs no producer's
   grant. GRANT is idempotent: deploying twice changes nothing. */
GRANT EXECUTE ON OBJECT::dbo.Fail_FifoQueue_trx TO QueueWorker;
GRANT EXECUTE ON OBJECT::dbo.Fail_StrictFifoQueue_trx TO QueueWorker;
GRANT EXECUTE ON OBJECT::dbo.Fail_LifoStack_trx TO QueueWorker;
GRANT EXECUTE ON OBJECT::dbo.Fail_PendingQueue_trx TO QueueWorker;
GRANT EXECUTE ON OBJECT::dbo.Fail_TransportMessage_trx TO QueueWorker;
GRANT SELECT ON OBJECT::dbo.DeadLetter_V TO QueueAdmin;
GRANT SELECT ON OBJECT::dbo.DeadLetterCount_V TO QueueAdmin;
GRANT EXECUTE ON OBJECT::dbo.Replay_DeadLetter_trx TO QueueAdmin;
GRANT EXECUTE ON OBJECT::dbo.Delete_DeadLetter_trx TO QueueAdmin;
GRANT SELECT ON OBJECT::dbo.DeadLetterCount_V TO QueueMonitor;
GO
