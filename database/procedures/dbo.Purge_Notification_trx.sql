SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.Purge_Notification_trx: removes finished notifications (Failed, Completed,
   Cancelled, Terminated, PartiallyCompleted: the states where
   dbo.QueueIsFinished_fn = 1) that have not changed for @OlderThanMinutes, those
   that finished first first, in short transactions of at most @BatchSize items, so that a purge
   never holds many locks or makes a worker wait for long. Each transaction picks
   its items with UPDLOCK, ROWLOCK, READPAST, on their own rows (PK_Notification): an
   item another session holds (an operator's Retry_, another purge of either mode)
   is left for the next run, so that a purge and such a session never wait for
   each other in a cycle. It copies them into dbo.NotificationArchive when asked,
   deletes them with their attempt history (first, in chunks) and their rows in
   dbo.Notification_ResetPassword, dbo.Notification_Email, dbo.Notification_Sms
   (next), which are all that refers to an item, and commits. The purge stops after
   a batch that was not full, or after @MaxBatches.
   The finished states are listed literally, as in the filter of the purge
   index IX_Notification_Finished (UpdatedAt of the finished items), which the pick
   reads in order and stops at its batch. Keep the list in step with
   dbo.QueueIsFinished_fn.
   Meant for a SQL Server Agent job step. Should a deadlock still pick it, the
   purge gives way (DEADLOCK_PRIORITY LOW): its current batch is rolled back with
   error 1205, the batches before it stay committed, and the next run goes on.
   The exact mode (@Keys instead of @OlderThanMinutes) removes only the items a
   caller listed, such as those relq.pipeline has just copied into a Parquet
   archive: each one only if it is still finished and its UpdatedAt is still the
   one listed (an item an operator retried since then stays), whatever its age,
   in the same short transactions (oldest key first) and with the same READPAST:
   an item another session holds stays too. The caller compares Removed with what it listed.
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
     {"EnqueuedAt": ..., "UpdatedAt": ...} objects, ISO 8601 in UTC without an
     offset or Z (as FOR JSON writes a DATETIME2: SQL Server would drop an offset
     without a word), each item at most once; NULL (default): the age mode. JSON
     rather than a table-valued parameter, so that every driver can send it
     (FreeTDS before 1.4 and jTDS cannot send a TVP) and the age mode's callers
     need not change.
   Returns 0 with one row (Removed, Archived): how many items it deleted and how
   many of them it archived; 1 on error: 735701 inside a transaction or with
   IMPLICIT_TRANSACTIONS ON, 735707 a bad parameter (its message names it; for
   @Keys: not JSON, not an array, or the first bad entry, counted from 1: not an
   object, a time missing, with an offset or not ISO 8601, an item listed again),
   735703 an item that vanished between its pick and its delete (nothing of that
   batch is kept). */
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
    -- The age mode's candidates of a batch, and where the next batch's pick goes on from (the
    -- last candidate, in the order they finished): so a run passes over the items it skipped
    -- and never picks them again, however long another session holds them.
    DECLARE @Candidates TABLE (
        EnqueuedAt DATETIME2(7) NOT NULL PRIMARY KEY,
        UpdatedAt DATETIME2(7) NOT NULL
    );
    DECLARE @FromUpdatedAt DATETIME2(7) = '0001-01-01';
    DECLARE @FromEnqueuedAt DATETIME2(7) = '0001-01-01';
    DECLARE @Batch TABLE (EnqueuedAt DATETIME2(7) NOT NULL PRIMARY KEY);
    -- The exact mode's items, as listed in @Keys, once checked. Keyed on EnqueuedAt: the pick
    -- reads them in that order from where the batch before it stopped (@ListedFrom).
    DECLARE @Listed TABLE (
        EnqueuedAt DATETIME2(7) NOT NULL PRIMARY KEY,
        UpdatedAt DATETIME2(7) NOT NULL
    );
    DECLARE @ListedFrom DATETIME2(7) = '0001-01-01';
    DECLARE @Problem NVARCHAR(200);
    DECLARE @Batches INT = 0;
    DECLARE @Picked INT;
    DECLARE @Locked INT;
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
            RAISERROR (735701, 16, 1, N'dbo.Purge_Notification_trx');
            GOTO EXIT_ERROR;
        END;
    IF (@Keys IS NOT NULL AND @OlderThanMinutes IS NOT NULL)
        BEGIN
            RAISERROR (735707, 16, 1, @Proc, N'give @OlderThanMinutes or @Keys, not both');
            GOTO EXIT_ERROR;
        END;
    IF (@Keys IS NULL AND (@OlderThanMinutes IS NULL OR @OlderThanMinutes NOT BETWEEN 1 AND 52560000))
        BEGIN
            RAISERROR (735707, 16, 1, @Proc, N'@OlderThanMinutes is required: 1 to 52560000');
            GOTO EXIT_ERROR;
        END;
    IF (@BatchSize IS NULL OR @BatchSize NOT BETWEEN 1 AND 1500)
        BEGIN
            RAISERROR (735707, 16, 1, @Proc, N'@BatchSize must be 1 to 1500');
            GOTO EXIT_ERROR;
        END;
    IF (@Archive IS NULL)
        BEGIN
            RAISERROR (735707, 16, 1, @Proc, N'@Archive must be 0 or 1');
            GOTO EXIT_ERROR;
        END;
    IF (@MaxBatches < 1)
        BEGIN
            RAISERROR (735707, 16, 1, @Proc, N'@MaxBatches must be 1 or more, or NULL for no limit');
            GOTO EXIT_ERROR;
        END;
    IF (@Keys IS NOT NULL AND ISJSON(@Keys) = 0)
        BEGIN
            RAISERROR (735707, 16, 1, @Proc, N'@Keys must be JSON: an array of {EnqueuedAt, UpdatedAt}');
            GOTO EXIT_ERROR;
        END;
    -- ISJSON takes an object as well. Wrapped in [ ], any JSON text is one element, whose type
    -- tells an array (4) from an object (5), whatever white space comes before it.
    IF (@Keys IS NOT NULL AND (SELECT j.[type] FROM OPENJSON(N'[' + @Keys + N']') AS j) <> 4)
        BEGIN
            RAISERROR (735707, 16, 1, @Proc, N'@Keys must be an array of {EnqueuedAt, UpdatedAt}, not an object');
            GOTO EXIT_ERROR;
        END;
    -- The first bad entry, if any, before @Listed takes one: its key would refuse an item
    -- listed twice with error 2627, not 735707. An entry is an object (OPENJSON's type 5) with
    -- both times in ISO 8601 (style 126) and no offset or Z, each item once.
    IF (@Keys IS NOT NULL)
        BEGIN
            SELECT TOP (1) @Problem = N'@Keys entry ' + CAST(k.EntryNo + 1 AS NVARCHAR(10)) + k.Problem
            FROM (
                SELECT
                    CAST(j.[key] AS INT) AS EntryNo,
                    CASE
                        WHEN j.[type] <> 5 THEN N' is not an object'
                        WHEN t.EnqueuedAtText IS NULL OR t.UpdatedAtText IS NULL
                            THEN N' lacks EnqueuedAt or UpdatedAt'
                        WHEN
                            t.EnqueuedAtText LIKE N'%[+Zz]%' OR CHARINDEX(N'-', t.EnqueuedAtText, 11) > 0
                            OR t.UpdatedAtText LIKE N'%[+Zz]%' OR CHARINDEX(N'-', t.UpdatedAtText, 11) > 0
                            THEN N' has a time with an offset or Z: give it in UTC without one'
                        WHEN c.EnqueuedAt IS NULL OR c.UpdatedAt IS NULL THEN N' has a time that is not ISO 8601'
                        WHEN ROW_NUMBER() OVER (PARTITION BY c.EnqueuedAt ORDER BY CAST(j.[key] AS INT)) > 1
                            THEN N' lists an item that an entry before it lists'
                    END AS Problem
                FROM OPENJSON(@Keys) AS j
                CROSS APPLY (
                    SELECT
                        CASE WHEN j.[type] = 5 THEN JSON_VALUE(j.[value], '$.EnqueuedAt') END AS EnqueuedAtText,
                        CASE WHEN j.[type] = 5 THEN JSON_VALUE(j.[value], '$.UpdatedAt') END AS UpdatedAtText
                ) AS t
                CROSS APPLY (
                    SELECT
                        TRY_CONVERT(DATETIME2(7), t.EnqueuedAtText, 126) AS EnqueuedAt,
                        TRY_CONVERT(DATETIME2(7), t.UpdatedAtText, 126) AS UpdatedAt
                ) AS c
            ) AS k
            WHERE k.Problem IS NOT NULL
            ORDER BY k.EntryNo ASC;
            IF (@Problem IS NOT NULL)
                BEGIN
                    RAISERROR (735707, 16, 1, @Proc, @Problem);
                    GOTO EXIT_ERROR;
                END;
            INSERT INTO @Listed (EnqueuedAt, UpdatedAt)
            SELECT
                TRY_CONVERT(DATETIME2(7), JSON_VALUE(j.[value], '$.EnqueuedAt'), 126) AS EnqueuedAt,
                TRY_CONVERT(DATETIME2(7), JSON_VALUE(j.[value], '$.UpdatedAt'), 126) AS UpdatedAt
            FROM OPENJSON(@Keys) AS j;
            SELECT
                @RowCnt = @@ROWCOUNT,
                @ErrNo = @@ERROR;
            IF (@ErrNo <> 0) GOTO EXIT_ERROR;
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
            DELETE FROM @Candidates;
            SELECT
                @RowCnt = @@ROWCOUNT,
                @ErrNo = @@ERROR;
            IF (@ErrNo <> 0) GOTO EXIT_TRANSACTION;

            -- The locks keep each picked item as it is (finished, same UpdatedAt) until the commit.
            IF (@Keys IS NULL)
                BEGIN
                    -- The candidates, in the order they finished, from IX_Notification_Finished (whose
                    -- rows this locks: a second age purge passes over them).
                    INSERT INTO @Candidates (EnqueuedAt, UpdatedAt)
                    SELECT TOP (@BatchSize)
                        n.EnqueuedAt,
                        n.UpdatedAt
                    FROM dbo.Notification AS n WITH (UPDLOCK, ROWLOCK, READPAST, READCOMMITTEDLOCK)
                    WHERE
                        n.[Status] IN ('Failed', 'Completed', 'Cancelled', 'Terminated', 'PartiallyCompleted')
                        AND n.UpdatedAt < @FinishedBefore
                        AND n.UpdatedAt >= @FromUpdatedAt
                        AND (n.UpdatedAt > @FromUpdatedAt OR n.EnqueuedAt > @FromEnqueuedAt)
                    ORDER BY n.UpdatedAt ASC, n.EnqueuedAt ASC;
                    SELECT
                        @Picked = @@ROWCOUNT,
                        @ErrNo = @@ERROR;
                    IF (@ErrNo <> 0) GOTO EXIT_TRANSACTION;
                    SELECT TOP (1)
                        @FromUpdatedAt = c.UpdatedAt,
                        @FromEnqueuedAt = c.EnqueuedAt
                    FROM @Candidates AS c
                    ORDER BY c.UpdatedAt DESC, c.EnqueuedAt DESC;
                    -- Then their own rows, which the exact mode and Retry_ lock first: one held
                    -- by another session is passed over, never waited for. Waiting would close a
                    -- cycle (that session's delete or update of the item waits for the index row
                    -- locked above) that only a deadlock would break.
                    INSERT INTO @Batch (EnqueuedAt)
                    SELECT n.EnqueuedAt
                    FROM @Candidates AS c
                    INNER JOIN
                        dbo.Notification AS n WITH (
                            UPDLOCK, ROWLOCK, READPAST, READCOMMITTEDLOCK, FORCESEEK (PK_Notification (EnqueuedAt))
                        )
                        ON c.EnqueuedAt = n.EnqueuedAt
                    WHERE
                        n.[Status] IN ('Failed', 'Completed', 'Cancelled', 'Terminated', 'PartiallyCompleted')
                        AND n.UpdatedAt < @FinishedBefore;
                    SELECT
                        @Locked = @@ROWCOUNT,
                        @ErrNo = @@ERROR;
                    IF (@ErrNo <> 0) GOTO EXIT_TRANSACTION;
                END;
            IF (@Keys IS NOT NULL)
                BEGIN
                    -- One seek on the queue's key per listed item, pinned by FORCESEEK on PK_Notification:
                    -- from compatibility level 150 the optimizer sees @Listed's row count (table
                    -- variable deferred compilation), and for a large list it could pick a hash or
                    -- merge join that scans the queue under UPDLOCK, a lock per row read, up to an
                    -- escalation to a table lock that stops every claim; a seek on
                    -- IX_Notification_Finished instead would lock that index's rows, not the items' keys.
                    -- @Listed is read in its key order (no sort) from where the batch before stopped:
                    -- at that batch's last item, deleted since, which >= reads again and finds gone.
                    -- So no batch reads again the items the ones before it passed over.
                    INSERT INTO @Batch (EnqueuedAt)
                    SELECT TOP (@BatchSize) n.EnqueuedAt
                    FROM @Listed AS l
                    INNER JOIN
                        dbo.Notification AS n WITH (
                            UPDLOCK, ROWLOCK, READPAST, READCOMMITTEDLOCK, FORCESEEK (PK_Notification (EnqueuedAt))
                        )
                        ON l.EnqueuedAt = n.EnqueuedAt AND l.UpdatedAt = n.UpdatedAt
                    WHERE
                        l.EnqueuedAt >= @ListedFrom
                        AND n.[Status] IN ('Failed', 'Completed', 'Cancelled', 'Terminated', 'PartiallyCompleted')
                    ORDER BY l.EnqueuedAt ASC;
                    SELECT
                        @Picked = @@ROWCOUNT,
                        @ErrNo = @@ERROR;
                    IF (@ErrNo <> 0) GOTO EXIT_TRANSACTION;
                    SET @Locked = @Picked;
                    SET @ListedFrom = (SELECT MAX(b.EnqueuedAt) FROM @Batch AS b);
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
                        ArchivedAt,
                        Duration,
                        BatchID
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
                        SYSUTCDATETIME() AS ArchivedAt,
                        v.Duration,
                        src.BatchID
                    FROM dbo.Worker_Notification_V AS v
                    INNER JOIN @Batch AS b ON v.EnqueuedAt = b.EnqueuedAt
                    -- BatchID is not the worker view's (its columns are the pipeline's layout)
                    INNER JOIN dbo.Notification AS src ON v.EnqueuedAt = src.EnqueuedAt;
                    SELECT
                        @RowCnt = @@ROWCOUNT,
                        @ErrNo = @@ERROR;
                    IF (@ErrNo <> 0) GOTO EXIT_TRANSACTION;
                    IF (@RowCnt <> @Locked)
                        BEGIN
                            RAISERROR (735703, 16, 1, @Proc, @Locked, @RowCnt);
                            GOTO EXIT_TRANSACTION;
                        END;
                    SET @BatchArchived = @RowCnt;
                END;

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

            -- Then the rows of the tables the worker view joins: one per item at most.
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
            IF (@RowCnt <> @Locked)
                BEGIN
                    RAISERROR (735703, 16, 1, @Proc, @Locked, @RowCnt);
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
