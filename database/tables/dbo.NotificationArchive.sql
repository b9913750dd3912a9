SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.NotificationArchive: finished notifications that dbo.Purge_Notification_trx
   moved out of the queue (@Archive = 1) instead of only deleting them: one row per
   item, as dbo.Worker_Notification_V showed it at the purge (the item and the
   columns of the tables it joins, NULL where it had no row there), and when it was
   archived (ArchivedAt, UTC). The attempt history is not kept.
   Why: dbo.Notification stays small (its health counts, statistics, backups and
   maintenance grow with it), while the notifications and their outcomes stay
   available for support and audits for as long as the DBA wants it. It keeps what
   the joined tables held: personal data too, where they hold any.
   Nothing references this table and it references nothing, so the DBA may
   export it, delete from it or truncate it at any time; no procedure reads it.
   Duration (ms, the last attempt's) comes after ArchivedAt: databases that had the
   table before it got it from V0003__archive_duration.sql, and their older rows have none.
   BatchID, last: the batch the item belonged to (dbo.QueueBatch; NULL: none);
   databases that had the table before it got it from V0021, and their older rows
   have none. */
IF OBJECT_ID(N'dbo.NotificationArchive', N'U') IS NULL
    BEGIN
        CREATE TABLE dbo.NotificationArchive (
            EnqueuedAt dbo.[_Timestamp],
            [Type] dbo.[_Type],
            [Status] dbo.QueueState,
            [Step] dbo.QueueStep NULL,
            AttemptNum dbo.AttemptNum,
            ScheduledFor dbo.[_Timestamp],
            StartedAt dbo.[_Timestamp] NULL,
            UpdatedAt dbo.[_Timestamp],
            LockedBy dbo.WorkerName NULL,
            LeaseUntil dbo.[_Timestamp] NULL,
            [Priority] dbo.QueuePriority,
            GroupKey dbo.GroupKey NULL,
            DedupKey dbo.DedupKey NULL,
            Response dbo.WebResponse,
            Error dbo.WebResponse,
            UserID dbo.DbUserID NULL,
            Username dbo.DbUsername NULL,
            OTP dbo.OtpCode NULL,
            EmailTo dbo.Email NULL,
            PreferredLanguage dbo.[Name] NULL,
            EmailResponse dbo.WebResponse NULL,
            EmailError dbo.WebResponse NULL,
            PhoneNumber dbo.PhoneNumber NULL,
            SmsResponse dbo.WebResponse NULL,
            SmsError dbo.WebResponse NULL,
            ArchivedAt dbo.[_Timestamp] CONSTRAINT DF_NotificationArchive_ArchivedAt DEFAULT (SYSUTCDATETIME()),
            Duration dbo.Duration NULL,
            BatchID INT NULL,
            CONSTRAINT PK_NotificationArchive PRIMARY KEY CLUSTERED (EnqueuedAt, ArchivedAt)
        );
    END;
GO
