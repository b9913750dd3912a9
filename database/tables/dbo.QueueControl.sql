SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.QueueControl: the operating controls of the relational queues, changed while they
   run, without a deploy: one row per queue ([Type] = '') and one per job type of a queue
   that has a control. A missing row is a queue or type that runs, without a limit. Written
   only by dbo.Pause_Queue_trx, dbo.Resume_Queue_trx and dbo.Limit_Queue_trx; no file of
   database/data fills it, so no deploy overwrites what operators set. Read by every
   claim (dbo.Next_<Queue>_utx) and shown by dbo.QueueControl_V.
   Queue: the queue's table (dbo.<Queue>). Type: one of its job types (dbo.<Queue>Type),
     or '' for the queue as a whole.
   IsPaused: 1 while claims take nothing from the queue (its '' row) or the type.
   PausedBy, PausedAt, PauseReason: who paused it (a login or the name the caller gave),
     when (UTC) and why; kept after a resume, as the last pause.
   ResumedBy, ResumedAt: who resumed it and when; NULL while it is paused.
   TypeLimit: on a type's row, at most this many items of the type in Processing at
     once, across all workers; NULL: no limit.
   GroupLimit: on a queue's row, at most this many items of one GroupKey in Processing,
     in enqueue order; NULL: 1, a group's items one at a time.
   LimitSetBy, LimitSetAt: who set the row's limit last, and when (UTC).
   Claims of a limited type lock its row (UPDLOCK, HOLDLOCK) until they commit: see
   dbo.Next_<Queue>_utx. */
IF OBJECT_ID(N'dbo.QueueControl', N'U') IS NULL
    BEGIN
        CREATE TABLE dbo.QueueControl (
            [Queue] NVARCHAR(128) NOT NULL,
            [Type] VARCHAR(50) NOT NULL,
            IsPaused BIT NOT NULL CONSTRAINT DF_QueueControl_IsPaused DEFAULT (0),
            PausedBy NVARCHAR(128) NULL,
            PausedAt DATETIME2(7) NULL,
            PauseReason NVARCHAR(400) NULL,
            ResumedBy NVARCHAR(128) NULL,
            ResumedAt DATETIME2(7) NULL,
            TypeLimit SMALLINT NULL,
            GroupLimit SMALLINT NULL,
            LimitSetBy NVARCHAR(128) NULL,
            LimitSetAt DATETIME2(7) NULL,
            CONSTRAINT PK_QueueControl PRIMARY KEY CLUSTERED ([Queue], [Type]),
            CONSTRAINT QueueControl_Records_WhoPaused CHECK (
                IsPaused = 0 OR (PausedBy IS NOT NULL AND PausedAt IS NOT NULL AND PauseReason IS NOT NULL)
            ),
            CONSTRAINT QueueControl_LimitsTypes_OnTypeRows CHECK (
                TypeLimit IS NULL OR ([Type] <> '' AND TypeLimit >= 1)
            ),
            CONSTRAINT QueueControl_LimitsGroups_OnQueueRows CHECK (
                GroupLimit IS NULL OR ([Type] = '' AND GroupLimit >= 1)
            )
        );
    END;
GO
