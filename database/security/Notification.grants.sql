SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* What the queue roles may do with dbo.Notification: enqueue and list the job
   types (QueueProducer; its Add_ procedures are written by hand and granted in
   QueueProducer.sql); claim, lease, report and read the worker view (QueueWorker);
   control items, purge and read the worker view (QueueAdmin). QueueMonitor reads
   the health views only (database/security/QueueMonitor.sql). The roles are
   created in their own files; no grant is on a queue table (see QueueWorker.sql).
   GRANT is idempotent: deploying twice changes nothing. */
-- Its job types are reference rows, not queue rows: a producer may list them.
GRANT SELECT ON OBJECT::dbo.NotificationType TO QueueProducer;
GRANT EXECUTE ON OBJECT::dbo.Extend_Notification_trx TO QueueWorker;
GRANT EXECUTE ON OBJECT::dbo.Modify_Notification_Batch_trx TO QueueWorker;
GRANT EXECUTE ON OBJECT::dbo.Modify_Notification_trx TO QueueWorker;
GRANT EXECUTE ON OBJECT::dbo.Modify_Notification_utx TO QueueWorker;
GRANT EXECUTE ON OBJECT::dbo.Next_Notification_Batch_trx TO QueueWorker;
GRANT EXECUTE ON OBJECT::dbo.Next_Notification_trx TO QueueWorker;
GRANT EXECUTE ON OBJECT::dbo.Next_Notification_utx TO QueueWorker;
GRANT SELECT ON OBJECT::dbo.Worker_Notification_V TO QueueWorker;
GRANT EXECUTE ON TYPE::dbo.NotificationOutcomeList TO QueueWorker;
GRANT EXECUTE ON OBJECT::dbo.Cancel_Notification_trx TO QueueAdmin;
GRANT EXECUTE ON OBJECT::dbo.Move_Notification_utx TO QueueAdmin;
GRANT EXECUTE ON OBJECT::dbo.Pause_Notification_trx TO QueueAdmin;
GRANT EXECUTE ON OBJECT::dbo.Purge_Notification_trx TO QueueAdmin;
GRANT EXECUTE ON OBJECT::dbo.Reschedule_Notification_trx TO QueueAdmin;
GRANT EXECUTE ON OBJECT::dbo.Resume_Notification_trx TO QueueAdmin;
GRANT EXECUTE ON OBJECT::dbo.Retry_Notification_trx TO QueueAdmin;
GRANT EXECUTE ON OBJECT::dbo.Terminate_Notification_trx TO QueueAdmin;
GRANT SELECT ON OBJECT::dbo.Worker_Notification_V TO QueueAdmin;
GO
