SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* QueueAdmin: controls items and keeps the tables small: the item controls, the
   drain for T-SQL jobs, purges, the worker views to find the items and the
   attempt history (dbo.QueueAttempt_V) to see what happened to them.
   Here the transport queues'; each relational queue's are in <Queue>.grants.sql.
   Least privilege: no grant on a queue table, so a member reads and writes
   queue rows only through the procedures and views (their owner's rights carry the
   access: ownership chaining). GRANT is idempotent: deploying twice changes nothing. */
IF DATABASE_PRINCIPAL_ID(N'QueueAdmin') IS NULL
    BEGIN
        CREATE ROLE QueueAdmin AUTHORIZATION dbo;
    END;
GO
GRANT EXECUTE ON OBJECT::dbo.Purge_TransportMessage_trx TO QueueAdmin;
-- Every relational queue's attempt history, to see why an item failed before acting on it.
GRANT SELECT ON OBJECT::dbo.QueueAttempt_V TO QueueAdmin;
-- Pause and resume a queue or a job type, and set their limits (dbo.QueueControl), and
-- see them: the operating controls, changed without a deploy.
GRANT EXECUTE ON OBJECT::dbo.Pause_Queue_trx TO QueueAdmin;
GRANT EXECUTE ON OBJECT::dbo.Resume_Queue_trx TO QueueAdmin;
GRANT EXECUTE ON OBJECT::dbo.Limit_Queue_trx TO QueueAdmin;
GRANT SELECT ON OBJECT::dbo.QueueControl_V TO QueueAdmin;
GO
-- The enqueue, a Pending report and a retry declare a dbo.ItemKeyList inside
-- (dbo.Lock_ItemKeys_utx's argument). Ownership chaining carries DML and EXEC, and
-- declaring a variable of a table type takes EXECUTE on the type
-- (User-Defined Table Types, Security:
-- https://learn.microsoft.com/previous-versions/sql/sql-server-2008-r2/bb522526(v=sql.105)):
-- granted, so that a member's call cannot fail on it. It gives no access to any data.
GRANT EXECUTE ON TYPE::dbo.ItemKeyList TO QueueAdmin;
-- Likewise a final report, a control and a claim's clean-up declare a dbo.QueueBatchCountList
-- (dbo.Count_QueueBatch_utx's argument) for the items' batches (docs/batches.md).
GRANT EXECUTE ON TYPE::dbo.QueueBatchCountList TO QueueAdmin;
GO
-- The dashboard tells a secret or personal column of a worker view by its type
-- (relq/dashboard/privacy.py), whatever the column's name. TYPE_NAME returns NULL to a
-- user with no permission on the type (metadata visibility:
-- https://learn.microsoft.com/sql/relational-databases/security/metadata-visibility-configuration),
-- and such a column would be shown in clear. VIEW DEFINITION makes the types' names
-- visible to a member; it gives no access to any data.
GRANT VIEW DEFINITION ON TYPE::dbo.OtpCode TO QueueAdmin;
GRANT VIEW DEFINITION ON TYPE::dbo.Email TO QueueAdmin;
GRANT VIEW DEFINITION ON TYPE::dbo.PhoneNumber TO QueueAdmin;
GRANT VIEW DEFINITION ON TYPE::dbo.DbUsername TO QueueAdmin;
GO
