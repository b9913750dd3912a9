SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.SyncQueueTypeProcedure: the job types whose work is itself T-SQL (a
   subtype of dbo.SyncQueueType): dbo.Drain_SyncQueue_trx runs JobProcedure for
   each of their items. A type without a row here is worked on outside the
   database (by a Python worker). The job procedure's contract is in
   dbo.Drain_SyncQueue_trx's header. Rows are the deploying team's own: add
   them in a file of database/data (a MERGE); no procedure writes them, and no
   relq role may.
   JobProcedure names a procedure of this database's dbo schema, as dbo.<name>
   exactly: the CHECK SyncQueueTypeProcedure_IsRunBy_DboProcedure
   (dbo.JobProcedureIsValid_fn says which names pass) refuses anything else at
   INSERT and UPDATE with error 547, naming the constraint. It cannot know
   whether the procedure exists, then or later: the drain looks it up again
   before each run (dbo.JobProcedureToRun_fn). Databases that had the table
   before the CHECK get it WITH CHECK at the upgrade (V0004__job_procedure_dbo.sql):
   a row that breaks it stops that deploy with error 547 until it is corrected. */
IF OBJECT_ID(N'dbo.SyncQueueTypeProcedure', N'U') IS NULL
    BEGIN
        CREATE TABLE dbo.SyncQueueTypeProcedure (
            [Type] dbo.[_Type],
            JobProcedure NVARCHAR(300) NOT NULL,
            CONSTRAINT PK_SyncQueueTypeProcedure PRIMARY KEY CLUSTERED ([Type]),
            CONSTRAINT SyncQueueTypeProcedure_Is_SyncQueueType FOREIGN KEY ([Type])
            REFERENCES dbo.SyncQueueType ([Type]),
            CONSTRAINT SyncQueueTypeProcedure_IsRunBy_DboProcedure
            CHECK (dbo.JobProcedureIsValid_fn(JobProcedure) = 1)
        );
    END;
GO
