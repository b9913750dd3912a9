SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.Purge_Notification_trx: removes finished notifications (Failed, Completed,
   Cancelled, Terminated, PartiallyCompleted: the states where
   dbo.QueueIsFinished_fn = 1) that have not changed for @OlderThanMinutes, those
   that finished first first, in short transactions of at most @BatchSize items, so that a purge
   never holds many locks or makes a worker wait for long. Each transaction picks
   its items with UPDLOCK, ROWLOCK, READPAST (an item another session holds is
   left for the next run), copies them into dbo.NotificationArchive when asked,
   deletes their ResetPassword, e-mail and SMS rows, then the items themselves
   (and their attempt history, deleted first in chunks of 4,000), and commits. The
   purge stops after a batch that was not full, or after @MaxBatches.
   The finished states are listed literally, as in the filter of the purge
   index IX_Notification_Finished (UpdatedAt of the finished items), which the pick
   reads in order and stops at its batch. Keep the list in step with
   dbo.QueueIsFinished_fn.
   Meant for a SQL Server Agent job step. In a deadlock the purge gives way
   (DEADLOCK_PRIORITY LOW; only an operator's Retry_ of an old failed item can
   meet it): its current batch is rolled back with error 1205, the batches
   before it stay committed, and the next run goes on.
   The exact mode (@Keys instead of @OlderThanMinutes) removes only the items a
   caller listed, such as those relq.pipeline has just copied into a Parquet
   archive: each one only if it is still finished and its UpdatedAt is still the
   one listed (an item an operator retried since then stays), whatever its age,
   in the same short transactions and with the same READPAST: an item another
   session holds stays too. The caller compares Removed with what it listed.
   @OlderThanMinutes: 1 to 52560000 (100 years), required without @Keys: a
     finished item goes once its UpdatedAt (when it finished) is older than this.
   @BatchSize: items per transaction, 1 to 1500 (default 1000), below the 5,000
     locks on one index at which a statement escalates to a table lock (the
     attempt history goes in chunks of 4,000, whatever the attempts per item).
   @Archive: 1 copies each item into dbo.NotificationArchive before deleting it;
     0 (default) deletes only.
   @MaxBatches: stop after this many transactions, 1 or more; NULL (default):
     until no finished item of that age is left.
   @Removed, @Archived: OUTPUT, the counts of the result row, for a T-SQL caller
     (INSERT ... EXEC cannot capture the row: it would open the transaction that
     a _trx refuses).
   @Keys: the exact mode, instead of @OlderThanMinutes: a JSON array of
     {"EnqueuedAt": ..., "UpdatedAt": ...} objects, ISO 8601 UTC (as FOR JSON
     writes them), each item at most once; NULL (default): the age mode. JSON
     rather than a table-valued parameter, so that every driver can send it
     (FreeTDS before 1.4 and jTDS cannot send a TVP) and the age mode's callers
     need not change.
   Returns 0 with one row (Removed, Archived): how many items it deleted and how
   many of them it archived; 1 on error: 50001 inside a transaction or with
   IMPLICIT_TRANSACTIONS ON, 50007 a bad parameter (an age and @Keys together,
   @Keys not such a list), 50003 an item that vanished
   between its pick and its delete (nothing of that batch is kept). */
CREATE OR ALTER PROCEDURE dbo.Purge_Notification_trx
    @OlderThanMinutes INT = NULL,
    @BatchSize INT = 1000,
    @Archive BIT = 0,
    @MaxBatches INT = NULL,
    @Removed INT = NULL OUTPUT,
    @Archived INT = NULL OUTPUT,
    @Keys NVARCHAR(MAX) = NULL
AS
BEGIN
    SET NOCOUNT ON;
    SET XACT_ABORT ON;
    -- READPAST needs READ COMMITTED, whatever the connection's default.
    SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
    -- A purge can run again later; a worker's or an operator's transaction cannot.
    SET DEADLOCK_PRIORITY LOW;
    DECLARE @Proc NVARCHAR(128) = N'dbo.Purge_Notification_trx';
    DECLARE @FinishedBefore dbo.[_Timestamp];
    DECLARE @Batch TABLE (EnqueuedAt DATETIME2(7) NOT NULL PRIMARY KEY);
    -- The exact mode's items, as listed in @Keys (NULL where an entry did not convert).
    DECLARE @Listed TABLE (
        EntryNo INT NOT NULL PRIMARY KEY,
        EnqueuedAt DATETIME2(7) NULL,
        UpdatedAt DATETIME2(7) NULL
    );
    DECLARE @Batches INT = 0;
    DECLARE @Picked INT;
    DECLARE @BatchArchived INT;
    DECLARE @ErrNo INT;
    DECLARE @RowCnt INT;
    SELECT
        @Removed = 0,
        @Archived = 0;

    -- IMPLICIT_TRANSACTIONS ON (JDBC's setAutoCommit(false), ODBC's manual commit) would nest
    -- BEGIN TRANSACTION inside an implicit one and return with it still open.
    IF (@@TRANCOUNT > 0 OR (@@OPTIONS & 2) = 2)
        BEGIN
            RAISERROR (50001, 16, 1, N'dbo.Purge_Notification_trx');
            GOTO EXIT_ERROR;
        END;
    IF (@Keys IS NOT NULL AND @OlderThanMinutes IS NOT NULL)
        BEGIN
            RAISERROR (50007, 16, 1, @Proc, N'give @OlderThanMinutes or @Keys, not both');
            GOTO EXIT_ERROR;
        END;
    IF (@Keys IS NULL AND (@OlderThanMinutes IS NULL OR @OlderThanMinutes NOT BETWEEN 1 AND 52560000))
        BEGIN
            RAISERROR (50007, 16, 1, @Proc, N'@OlderThanMinutes is required: 1 to 52560000');
            GOTO EXIT_ERROR;
        END;
    IF (@BatchSize IS NULL OR @BatchSize NOT BETWEEN 1 AND 1500)
        BEGIN
            RAISERROR (50007, 16, 1, @Proc, N'@BatchSize must be 1 to 1500');
            GOTO EXIT_ERROR;
        END;
    IF (@Archive IS NULL)
        BEGIN
            RAISERROR (50007, 16, 1, @Proc, N'@Archive must be 0 or 1');
            GOTO EXIT_ERROR;
        END;
    IF (@MaxBatches < 1)
        BEGIN
            RAISERROR (50007, 16, 1, @Proc, N'@MaxBatches must be 1 or more, or NULL for no limit');
            GOTO EXIT_ERROR;
        END;
    -- Every entry an object (OPENJSON's type 5) with both times in ISO 8601, each item once.
    IF (@Keys IS NOT NULL AND (ISJSON(@Keys) = 0 OR LTRIM(@Keys) NOT LIKE N'[[]%'))
        BEGIN
            RAISERROR (50007, 16, 1, @Proc, N'@Keys must be a JSON array of {EnqueuedAt, UpdatedAt}');
            GOTO EXIT_ERROR;
        END;
    IF (@Keys IS NOT NULL)
        BEGIN
            INSERT INTO @Listed (EntryNo, EnqueuedAt, UpdatedAt)
            SELECT
                CAST(j.[key] AS INT) AS EntryNo,
                TRY_CONVERT(DATETIME2(7), JSON_VALUE(j.[value], '$.EnqueuedAt'), 126) AS EnqueuedAt,
                TRY_CONVERT(DATETIME2(7), JSON_VALUE(j.[value], '$.UpdatedAt'), 126) AS UpdatedAt
            FROM OPENJSON(@Keys) AS j
            WHERE j.[type] = 5;
            SELECT
                @RowCnt = @@ROWCOUNT,
                @ErrNo = @@ERROR;
            IF (@ErrNo <> 0) GOTO EXIT_ERROR;
            IF (
                @RowCnt <> (SELECT COUNT(*) FROM OPENJSON(@Keys))
                OR EXISTS (
                    SELECT 1 FROM @Listed AS l
                    WHERE l.EnqueuedAt IS NULL OR l.UpdatedAt IS NULL
                )
            )
                BEGIN
                    RAISERROR (50007, 16, 1, @Proc, N'@Keys must be a JSON array of {EnqueuedAt, UpdatedAt}');
                    GOTO EXIT_ERROR;
                END;
            IF ((SELECT COUNT(DISTINCT l.EnqueuedAt) FROM @Listed AS l) <> @RowCnt)
                BEGIN
                    RAISERROR (50007, 16, 1, @Proc, N'@Keys lists an item more than once');
                    GOTO EXIT_ERROR;
                END;
        END;
    IF (@Keys IS NULL) SET @FinishedBefore = DATEADD(MINUTE, -@OlderThanMinutes, SYSUTCDATETIME());

    SET @Picked = @BatchSize;
    WHILE (@Picked = @BatchSize AND (@MaxBatches IS NULL OR @Batches < @MaxBatches))
        BEGIN
            SET @BatchArchived = 0;
            BEGIN TRANSACTION Purge_Notification;
            DELETE FROM @Batch;
            SELECT
                @RowCnt = @@ROWCOUNT,
                @ErrNo = @@ERROR;
            IF (@ErrNo <> 0) GOTO EXIT_TRANSACTION;

            -- The locks keep each picked item as it is (finished, same UpdatedAt) until the commit.
            IF (@Keys IS NULL)
                BEGIN
                    INSERT INTO @Batch (EnqueuedAt)
                    SELECT TOP (@BatchSize) n.EnqueuedAt
                    FROM dbo.Notification AS n WITH (UPDLOCK, ROWLOCK, READPAST)
                    WHERE
                        n.[Status] IN ('Failed', 'Completed', 'Cancelled', 'Terminated', 'PartiallyCompleted')
                        AND n.UpdatedAt < @FinishedBefore
                    ORDER BY n.UpdatedAt ASC, n.EnqueuedAt ASC;
                    SELECT
                        @Picked = @@ROWCOUNT,
                        @ErrNo = @@ERROR;
                    IF (@ErrNo <> 0) GOTO EXIT_TRANSACTION;
                END;
            IF (@Keys IS NOT NULL)
                BEGIN
                    -- A listed item is a seek on the key; one deleted by an earlier batch is gone.
                    INSERT INTO @Batch (EnqueuedAt)
                    SELECT TOP (@BatchSize) n.EnqueuedAt
                    FROM @Listed AS l
                    INNER JOIN dbo.Notification AS n WITH (UPDLOCK, ROWLOCK, READPAST)
                        ON l.EnqueuedAt = n.EnqueuedAt AND l.UpdatedAt = n.UpdatedAt
                    WHERE n.[Status] IN ('Failed', 'Completed', 'Cancelled', 'Terminated', 'PartiallyCompleted')
                    ORDER BY l.EnqueuedAt ASC;
                    SELECT
                        @Picked = @@ROWCOUNT,
                        @ErrNo = @@ERROR;
                    IF (@ErrNo <> 0) GOTO EXIT_TRANSACTION;
                END;

            IF (@Archive = 1)
                BEGIN
                    INSERT INTO dbo.NotificationArchive (
                        EnqueuedAt,
                        [Type],
                        [Status],
                        [Step],
                        AttemptNum,
                        ScheduledFor,
                        StartedAt,
                        UpdatedAt,
                        LockedBy,
                        LeaseUntil,
                        [Priority],
                        GroupKey,
                        DedupKey,
                        Response,
                        Error,
                        UserID,
                        Username,
                        OTP,
                        EmailTo,
                        PreferredLanguage,
                        EmailResponse,
                        EmailError,
                        PhoneNumber,
                        SmsResponse,
                        SmsError,
                        ArchivedAt
                    )
                    SELECT
                        v.EnqueuedAt,
                        v.[Type],
                        v.[Status],
                        v.[Step],
                        v.AttemptNum,
                        v.ScheduledFor,
                        v.StartedAt,
                        v.UpdatedAt,
                        v.LockedBy,
                        v.LeaseUntil,
                        v.[Priority],
                        v.GroupKey,
                        v.DedupKey,
                        v.Response,
                        v.Error,
                        v.UserID,
                        v.Username,
                        v.OTP,
                        v.EmailTo,
                        v.PreferredLanguage,
                        v.EmailResponse,
                        v.EmailError,
                        v.PhoneNumber,
                        v.SmsResponse,
                        v.SmsError,
                        SYSUTCDATETIME() AS ArchivedAt
                    FROM dbo.Worker_Notification_V AS v
                    INNER JOIN @Batch AS b ON v.EnqueuedAt = b.EnqueuedAt;
                    SELECT
                        @RowCnt = @@ROWCOUNT,
                        @ErrNo = @@ERROR;
                    IF (@ErrNo <> 0) GOTO EXIT_TRANSACTION;
                    IF (@RowCnt <> @Picked)
                        BEGIN
                            RAISERROR (50003, 16, 1, @Proc, @Picked, @RowCnt);
                            GOTO EXIT_TRANSACTION;
                        END;
                    SET @BatchArchived = @RowCnt;
                END;

            -- The subtype and channels refer to the item without a cascade: they go first.
            -- The attempt history first, in chunks below the 5,000 locks at which one
            -- statement escalates to a table lock (which would stop every claim): an
            -- item may have had any number of attempts.
            SET @RowCnt = 4000;
            WHILE (@RowCnt = 4000)
                BEGIN
                    DELETE TOP (4000) a
                    FROM dbo.NotificationAttempt AS a WITH (ROWLOCK)
                    INNER JOIN @Batch AS b ON a.EnqueuedAt = b.EnqueuedAt;
                    SELECT
                        @RowCnt = @@ROWCOUNT,
                        @ErrNo = @@ERROR;
                    IF (@ErrNo <> 0) GOTO EXIT_TRANSACTION;
                END;

            DELETE FROM dbo.Notification_ResetPassword WITH (ROWLOCK)
            WHERE EnqueuedAt IN (SELECT b.EnqueuedAt FROM @Batch AS b);
            SELECT
                @RowCnt = @@ROWCOUNT,
                @ErrNo = @@ERROR;
            IF (@ErrNo <> 0) GOTO EXIT_TRANSACTION;
            DELETE FROM dbo.Notification_Email WITH (ROWLOCK)
            WHERE EnqueuedAt IN (SELECT b.EnqueuedAt FROM @Batch AS b);
            SELECT
                @RowCnt = @@ROWCOUNT,
                @ErrNo = @@ERROR;
            IF (@ErrNo <> 0) GOTO EXIT_TRANSACTION;
            DELETE FROM dbo.Notification_Sms WITH (ROWLOCK)
            WHERE EnqueuedAt IN (SELECT b.EnqueuedAt FROM @Batch AS b);
            SELECT
                @RowCnt = @@ROWCOUNT,
                @ErrNo = @@ERROR;
            IF (@ErrNo <> 0) GOTO EXIT_TRANSACTION;

            DELETE FROM dbo.Notification WITH (ROWLOCK)
            WHERE EnqueuedAt IN (SELECT b.EnqueuedAt FROM @Batch AS b);
            SELECT
                @RowCnt = @@ROWCOUNT,
                @ErrNo = @@ERROR;
            IF (@ErrNo <> 0) GOTO EXIT_TRANSACTION;
            IF (@RowCnt <> @Picked)
                BEGIN
                    RAISERROR (50003, 16, 1, @Proc, @Picked, @RowCnt);
                    GOTO EXIT_TRANSACTION;
                END;
            COMMIT TRANSACTION Purge_Notification;
            SET @Removed = @Removed + @RowCnt;
            SET @Archived = @Archived + @BatchArchived;
            SET @Batches = @Batches + 1;
        END;

    SELECT
        @Removed AS Removed,
        @Archived AS Archived;
    RETURN 0;

    EXIT_TRANSACTION:
    IF XACT_STATE() <> 0 ROLLBACK TRANSACTION Purge_Notification;

    EXIT_ERROR:
    RETURN 1;
END;
GO
