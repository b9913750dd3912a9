SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* What the queue roles may do with the recurring schedules (dbo.QueueSchedule): QueueAdmin
   adds, lists, pauses, resumes and removes them; QueueWorker reads them and fires their
   due slots (a worker runs the scheduler); QueueMonitor lists them. No grant is on the
   table: the fire enqueues through the queue's Add_<Queue>_utx by ownership chaining, so a
   worker needs no producer's grant. The roles are created in their own files. GRANT is
   idempotent: deploying twice changes nothing. */
GRANT EXECUTE ON OBJECT::dbo.Add_QueueSchedule_trx TO QueueAdmin;
GRANT EXECUTE ON OBJECT::dbo.Pause_QueueSchedule_trx TO QueueAdmin;
GRANT EXECUTE ON OBJECT::dbo.Resume_QueueSchedule_trx TO QueueAdmin;
GRANT EXECUTE ON OBJECT::dbo.Delete_QueueSchedule_trx TO QueueAdmin;
GRANT SELECT ON OBJECT::dbo.QueueSchedule_V TO QueueAdmin;
GRANT EXECUTE ON OBJECT::dbo.Fire_QueueSchedule_trx TO QueueWorker;
GRANT SELECT ON OBJECT::dbo.QueueSchedule_V TO QueueWorker;
GRANT SELECT ON OBJECT::dbo.QueueSchedule_V TO QueueMonitor;
GO
