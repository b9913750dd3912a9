SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.SyncQueueTypeProcedure: the job types whose work is itself T-SQL (a
   subtype of dbo.SyncQueueType): dbo.Drain_SyncQueue_trx runs JobProcedure for
   each of their items. A type without a row here is worked on outside the
   database (by a Python worker). JobProcedure is a schema-qualified procedure
   name; its contract is in dbo.Drain_SyncQueue_trx's header. Rows are the
   deploying team's own: add them in a file of database/data. */
IF OBJECT_ID(N'dbo.SyncQueueTypeProcedure', N'U') IS NULL
    BEGIN
        CREATE TABLE dbo.SyncQueueTypeProcedure (
            [Type] dbo.[_Type],
            JobProcedure NVARCHAR(300) NOT NULL,
            CONSTRAINT PK_SyncQueueTypeProcedure PRIMARY KEY CLUSTERED ([Type]),
            CONSTRAINT SyncQueueTypeProcedure_Is_SyncQueueType FOREIGN KEY ([Type])
            REFERENCES dbo.SyncQueueType ([Type])
        );
    END;
GO
