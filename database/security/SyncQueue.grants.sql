SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* What the queue roles may do with dbo.SyncQueue: enqueue and list the job types
   (QueueProducer); claim, lease, report and read the worker view (QueueWorker);
   control items, drain, purge and read the worker view (QueueAdmin). QueueMonitor
   reads the health views only (database/security/QueueMonitor.sql). The roles are
   created in their own files; no grant is on a queue table (see QueueWorker.sql).
   GRANT is idempotent: deploying twice changes nothing. */
GRANT EXECUTE ON OBJECT::dbo.Add_SyncQueue_trx TO QueueProducer;
GRANT EXECUTE ON OBJECT::dbo.Add_SyncQueue_utx TO QueueProducer;
GRANT EXECUTE ON TYPE::dbo.SyncQueueItemList TO QueueProducer;
-- Its job types are reference rows, not queue rows: a producer may list them.
GRANT SELECT ON OBJECT::dbo.SyncQueueType TO QueueProducer;
GRANT EXECUTE ON OBJECT::dbo.Extend_SyncQueue_trx TO QueueWorker;
GRANT EXECUTE ON OBJECT::dbo.Modify_SyncQueue_Batch_trx TO QueueWorker;
GRANT EXECUTE ON OBJECT::dbo.Modify_SyncQueue_trx TO QueueWorker;
GRANT EXECUTE ON OBJECT::dbo.Modify_SyncQueue_utx TO QueueWorker;
GRANT EXECUTE ON OBJECT::dbo.Next_SyncQueue_Batch_trx TO QueueWorker;
GRANT EXECUTE ON OBJECT::dbo.Next_SyncQueue_trx TO QueueWorker;
GRANT EXECUTE ON OBJECT::dbo.Next_SyncQueue_utx TO QueueWorker;
GRANT SELECT ON OBJECT::dbo.Worker_SyncQueue_V TO QueueWorker;
GRANT EXECUTE ON TYPE::dbo.SyncQueueOutcomeList TO QueueWorker;
-- The report or control that finishes a batch whose callback is a job of this queue
-- enqueues it through its Add_, declaring a dbo.SyncQueueItemList there
-- (dbo.Callback_QueueBatch_utx); declaring one takes EXECUTE on its type
-- (QueueWorker.sql says where that is documented).
GRANT EXECUTE ON TYPE::dbo.SyncQueueItemList TO QueueWorker;
GRANT EXECUTE ON TYPE::dbo.SyncQueueItemList TO QueueAdmin;
GRANT EXECUTE ON OBJECT::dbo.Cancel_SyncQueue_trx TO QueueAdmin;
GRANT EXECUTE ON OBJECT::dbo.Drain_SyncQueue_trx TO QueueAdmin;
GRANT EXECUTE ON OBJECT::dbo.Move_SyncQueue_utx TO QueueAdmin;
GRANT EXECUTE ON OBJECT::dbo.Pause_SyncQueue_trx TO QueueAdmin;
GRANT EXECUTE ON OBJECT::dbo.Purge_SyncQueue_trx TO QueueAdmin;
GRANT EXECUTE ON OBJECT::dbo.Reschedule_SyncQueue_trx TO QueueAdmin;
GRANT EXECUTE ON OBJECT::dbo.Resume_SyncQueue_trx TO QueueAdmin;
GRANT EXECUTE ON OBJECT::dbo.Retry_SyncQueue_trx TO QueueAdmin;
GRANT EXECUTE ON OBJECT::dbo.Terminate_SyncQueue_trx TO QueueAdmin;
GRANT SELECT ON OBJECT::dbo.Worker_SyncQueue_V TO QueueAdmin;
GO
