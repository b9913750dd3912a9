SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'Purge_SyncQueue_trxTests';
GO
-- The purge refuses a transaction, so every test that gets past its first check is a
-- NoTransaction test: the fakes below hold the rows the purge commits, and tSQLt puts
-- the real tables back after the test. Fakes have no foreign keys: that the purge
-- deletes the attempt history itself (it assumes no cascade) is what the tests check;
-- the order of its deletes, which the real keys would hold it to, is not exercised
-- here.
-- The purge's result row cannot be read here (INSERT ... EXEC would open the
-- transaction a _trx refuses): the tests read its @Removed and @Archived OUTPUT
-- parameters, which carry the same counts.
CREATE PROCEDURE Purge_SyncQueue_trxTests.FakeQueue
AS
BEGIN
    -- The claim and the purge read the queue (and the claim its history) WITH (FORCESEEK):
    -- a fake has no index to seek (error 8622) until its primary key is applied again.
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueue';
    EXEC tSQLt.ApplyConstraint @TableName = N'dbo.SyncQueue', @ConstraintName = N'PK_SyncQueue';
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueueAttempt';
    EXEC tSQLt.ApplyConstraint @TableName = N'dbo.SyncQueueAttempt', @ConstraintName = N'PK_SyncQueueAttempt';
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueueArchive';
END;
GO
-- Item @Item (1 to 59), keyed 2024-03-01T08:00:<@Item>, due then, in @Status since
-- @UpdatedAt, claimed once by host-a/1: a CustomerSync sync job for entity C-42.
CREATE PROCEDURE Purge_SyncQueue_trxTests.AddItem
    @Item INT,
    @Status VARCHAR(20),
    @UpdatedAt DATETIME2(7),
    @Payload NVARCHAR(MAX) = N'{"full":true}',
    @DedupKey NVARCHAR(200) = NULL
AS
BEGIN
    DECLARE @EnqueuedAt DATETIME2(7) = DATEADD(SECOND, @Item, CAST('2024-03-01T08:00:00' AS DATETIME2(7)));
    INSERT INTO dbo.SyncQueue (
        EnqueuedAt,
        [Type],
        EntityKey,
        Payload,
        [Status],
        [Step],
        AttemptNum,
        Response,
        Error,
        StartedAt,
        Duration,
        ScheduledFor,
        UpdatedAt,
        [Priority],
        GroupKey,
        DedupKey,
        LockedBy,
        LeaseUntil
    )
    VALUES (
        @EnqueuedAt,
        'CustomerSync',
        N'C-42',
        @Payload,
        @Status,
        'Push',
        1,
        N'synced',
        N'',
        DATEADD(SECOND, 1, @EnqueuedAt),
        4000,
        @EnqueuedAt,
        @UpdatedAt,
        5,
        N'group-42',
        @DedupKey,
        N'host-a/1',
        NULL
    );
END;
GO
-- Asserts the items left in dbo.SyncQueue, by their @Item number (the second
-- of their key), as a list such as '1,2'.
-- A NoTransaction test makes no permanent objects, so it compares values, not tables.
CREATE PROCEDURE Purge_SyncQueue_trxTests.AssertRemaining
    @Expected VARCHAR(100),
    @Message NVARCHAR(200) = NULL
AS
BEGIN
    DECLARE @Actual VARCHAR(8000);
    SELECT
        @Actual = ISNULL(
            STRING_AGG(CAST(DATEPART(SECOND, q.EnqueuedAt) AS VARCHAR(2)), ',') WITHIN GROUP (ORDER BY q.EnqueuedAt),
            ''
        )
    FROM dbo.SyncQueue AS q;
    EXEC tSQLt.AssertEqualsString @Expected = @Expected, @Actual = @Actual, @Message = @Message;
END;
GO
-- Calls the purge with one bad parameter and asserts that it raised 735707 with a message
-- LIKE @ExpectedMessage: every check raises 735707, so only the message tells which one
-- refused the call. The other parameters' defaults are valid, so that a case fails only
-- on what it names.
CREATE PROCEDURE Purge_SyncQueue_trxTests.AssertRefused
    @OlderThanMinutes INT,
    @BatchSize INT = 1000,
    @Archive BIT = 0,
    @MaxBatches INT = NULL,
    @Keys NVARCHAR(MAX) = NULL,
    @ExpectedMessage NVARCHAR(400),
    @Case NVARCHAR(200)
AS
BEGIN
    DECLARE @ErrorNumber INT;
    DECLARE @ErrorMessage NVARCHAR(4000);
    BEGIN TRY
        EXEC dbo.Purge_SyncQueue_trx
            @OlderThanMinutes = @OlderThanMinutes,
            @BatchSize = @BatchSize,
            @Archive = @Archive,
            @MaxBatches = @MaxBatches,
            @Keys = @Keys;
    END TRY
    BEGIN CATCH
        SELECT
            @ErrorNumber = ERROR_NUMBER(),
            @ErrorMessage = ERROR_MESSAGE();
    END CATCH;
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;
    EXEC tSQLt.AssertEquals @Expected = 735707, @Actual = @ErrorNumber, @Message = @Case;
    EXEC tSQLt.AssertLike @ExpectedPattern = @ExpectedMessage, @Actual = @ErrorMessage, @Message = @Case;
END;
GO
-- Named in each NoTransaction annotation. Not called CleanUp: tSQLt runs a class's CleanUp
-- after such tests by itself, and this would run twice.
CREATE PROCEDURE Purge_SyncQueue_trxTests.RollbackLeftOpen
AS
BEGIN
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;
END;
GO
-- tSQLt runs this test inside its own transaction: exactly what a _trx refuses.
CREATE PROCEDURE Purge_SyncQueue_trxTests.[test Purge_SyncQueue_trx raises 735701 when a transaction is open]
AS
BEGIN
    EXEC Purge_SyncQueue_trxTests.FakeQueue;
    EXEC tSQLt.ExpectException
        @ExpectedErrorNumber = 735701,
        @ExpectedMessagePattern = N'relq: dbo.Purge_SyncQueue_trx owns its transaction%';

    EXEC dbo.Purge_SyncQueue_trx @OlderThanMinutes = 60;
END;
GO
--[@tSQLt:NoTransaction]('Purge_SyncQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Purge_SyncQueue_trxTests.[test Purge_SyncQueue_trx removes only the finished items older than the age when items of every state are there]
AS
BEGIN
    DECLARE @Old DATETIME2(7) = DATEADD(HOUR, -2, SYSUTCDATETIME());
    DECLARE @Recent DATETIME2(7) = DATEADD(MINUTE, -5, SYSUTCDATETIME());
    DECLARE @RetCode INT;
    DECLARE @TranCount INT;
    DECLARE @Removed INT;
    DECLARE @Archived INT;
    DECLARE @ArchiveRows INT;
    EXEC Purge_SyncQueue_trxTests.FakeQueue;
    -- Two hours old in each of the nine states (1 to 9); finished five minutes ago (10, 11).
    EXEC Purge_SyncQueue_trxTests.AddItem @Item = 1, @Status = 'Pending', @UpdatedAt = @Old;
    EXEC Purge_SyncQueue_trxTests.AddItem @Item = 2, @Status = 'Processing', @UpdatedAt = @Old;
    EXEC Purge_SyncQueue_trxTests.AddItem @Item = 3, @Status = 'Error', @UpdatedAt = @Old;
    EXEC Purge_SyncQueue_trxTests.AddItem @Item = 4, @Status = 'Paused', @UpdatedAt = @Old;
    EXEC Purge_SyncQueue_trxTests.AddItem @Item = 5, @Status = 'Failed', @UpdatedAt = @Old;
    EXEC Purge_SyncQueue_trxTests.AddItem @Item = 6, @Status = 'Completed', @UpdatedAt = @Old;
    EXEC Purge_SyncQueue_trxTests.AddItem @Item = 7, @Status = 'Cancelled', @UpdatedAt = @Old;
    EXEC Purge_SyncQueue_trxTests.AddItem @Item = 8, @Status = 'Terminated', @UpdatedAt = @Old;
    EXEC Purge_SyncQueue_trxTests.AddItem @Item = 9, @Status = 'PartiallyCompleted', @UpdatedAt = @Old;
    EXEC Purge_SyncQueue_trxTests.AddItem @Item = 10, @Status = 'Completed', @UpdatedAt = @Recent;
    EXEC Purge_SyncQueue_trxTests.AddItem @Item = 11, @Status = 'Failed', @UpdatedAt = @Recent;

    EXEC @RetCode = dbo.Purge_SyncQueue_trx
        @OlderThanMinutes = 60,
        @Removed = @Removed OUTPUT,
        @Archived = @Archived OUTPUT;
    SET @TranCount = @@TRANCOUNT;

    SET @ArchiveRows = (SELECT COUNT(*) FROM dbo.SyncQueueArchive);
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @TranCount, @Message = N'the transactions must be committed';
    EXEC Purge_SyncQueue_trxTests.AssertRemaining @Expected = '1,2,3,4,10,11';
    EXEC tSQLt.AssertEquals @Expected = 5, @Actual = @Removed, @Message = N'@Removed';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @Archived, @Message = N'@Archived';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @ArchiveRows, @Message = N'nothing is archived by default';
END;
GO
--[@tSQLt:NoTransaction]('Purge_SyncQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Purge_SyncQueue_trxTests.[test Purge_SyncQueue_trx removes the attempt history of the items it removes when they have them]
AS
BEGIN
    DECLARE @Old DATETIME2(7) = DATEADD(HOUR, -2, SYSUTCDATETIME());
    DECLARE @RetCode INT;
    DECLARE @Left VARCHAR(8000);
    EXEC Purge_SyncQueue_trxTests.FakeQueue;
    EXEC Purge_SyncQueue_trxTests.AddItem @Item = 1, @Status = 'Completed', @UpdatedAt = @Old;
    EXEC Purge_SyncQueue_trxTests.AddItem @Item = 2, @Status = 'Failed', @UpdatedAt = @Old;
    EXEC Purge_SyncQueue_trxTests.AddItem @Item = 3, @Status = 'Error', @UpdatedAt = @Old;
    -- Two attempts each: an item may have had any number.
    INSERT INTO dbo.SyncQueueAttempt (EnqueuedAt, StartedAt, AttemptNum, LockedBy, Outcome)
    SELECT
        q.EnqueuedAt,
        DATEADD(SECOND, 1, q.EnqueuedAt) AS StartedAt,
        1 AS AttemptNum,
        N'host-a/1' AS LockedBy,
        'Error' AS Outcome
    FROM dbo.SyncQueue AS q
    UNION ALL
    SELECT
        q.EnqueuedAt,
        DATEADD(SECOND, 2, q.EnqueuedAt) AS StartedAt,
        2 AS AttemptNum,
        N'host-a/1' AS LockedBy,
        'Error' AS Outcome
    FROM dbo.SyncQueue AS q;

    EXEC @RetCode = dbo.Purge_SyncQueue_trx @OlderThanMinutes = 60;

    -- In each table, only the unfinished item's rows are left (by @Item number).
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC Purge_SyncQueue_trxTests.AssertRemaining @Expected = '3';
    SET @Left = (
        SELECT STRING_AGG(CAST(DATEPART(SECOND, t.EnqueuedAt) AS VARCHAR(2)), ',') WITHIN GROUP (ORDER BY t.EnqueuedAt)
        FROM dbo.SyncQueueAttempt AS t
    );
    EXEC tSQLt.AssertEqualsString @Expected = '3,3', @Actual = @Left, @Message = N'attempts left';
END;
GO
--[@tSQLt:NoTransaction]('Purge_SyncQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Purge_SyncQueue_trxTests.[test Purge_SyncQueue_trx copies the items with their values into the archive when Archive is 1]
AS
BEGIN
    DECLARE @Old DATETIME2(7) = DATEADD(HOUR, -2, SYSUTCDATETIME());
    DECLARE @Full DATETIME2(7) = '2024-03-01T08:00:01';
    DECLARE @Bare DATETIME2(7) = '2024-03-01T08:00:02';
    DECLARE @Before DATETIME2(7);
    DECLARE @After DATETIME2(7);
    DECLARE @RetCode INT;
    DECLARE @Removed INT;
    DECLARE @Archived INT;
    DECLARE @ArchiveRows INT;
    DECLARE @FullMatch INT;
    DECLARE @BareMatch INT;
    EXEC Purge_SyncQueue_trxTests.FakeQueue;
    -- 1 has every value; 2 has none of the optional ones (no payload);
    -- 3 is unfinished.
    EXEC Purge_SyncQueue_trxTests.AddItem
        @Item = 1, @Status = 'Completed', @UpdatedAt = @Old, @DedupKey = N'dedup-1';
    EXEC Purge_SyncQueue_trxTests.AddItem
        @Item = 2, @Status = 'Failed', @UpdatedAt = @Old, @Payload = NULL;
    EXEC Purge_SyncQueue_trxTests.AddItem
        @Item = 3, @Status = 'Pending', @UpdatedAt = @Old;
    -- 1 belonged to batch 7: the archive keeps the batch, which the worker view does not show.
    UPDATE dbo.SyncQueue SET BatchID = 7
    WHERE EnqueuedAt = @Full;

    SET @Before = SYSUTCDATETIME();
    EXEC @RetCode = dbo.Purge_SyncQueue_trx
        @OlderThanMinutes = 60,
        @Archive = 1,
        @Removed = @Removed OUTPUT,
        @Archived = @Archived OUTPUT;
    SET @After = SYSUTCDATETIME();

    SET @ArchiveRows = (SELECT COUNT(*) FROM dbo.SyncQueueArchive);
    -- Every column of dbo.Worker_SyncQueue_V, as the item had it.
    SET @FullMatch = (
        SELECT COUNT(*)
        FROM dbo.SyncQueueArchive AS a
        WHERE
            a.EnqueuedAt = @Full
            AND a.[Type] = 'CustomerSync'
            AND a.EntityKey = N'C-42'
            AND a.Payload = N'{"full":true}'
            AND a.[Status] = 'Completed'
            AND a.[Step] = 'Push'
            AND a.AttemptNum = 1
            AND a.ScheduledFor = @Full
            AND a.StartedAt = DATEADD(SECOND, 1, @Full)
            AND a.UpdatedAt = @Old
            AND a.Duration = 4000
            AND a.LockedBy = N'host-a/1'
            AND a.LeaseUntil IS NULL
            AND a.[Priority] = 5
            AND a.GroupKey = N'group-42'
            AND a.DedupKey = N'dedup-1'
            AND a.Response = N'synced'
            AND a.Error = N''
            AND a.BatchID = 7
            AND a.ArchivedAt BETWEEN @Before AND @After
    );
    SET @BareMatch = (
        SELECT COUNT(*)
        FROM dbo.SyncQueueArchive AS a
        WHERE
            a.EnqueuedAt = @Bare
            AND a.[Status] = 'Failed'
            AND a.UpdatedAt = @Old
            AND a.Payload IS NULL
            AND a.DedupKey IS NULL
            AND a.BatchID IS NULL
            AND a.ArchivedAt BETWEEN @Before AND @After
    );
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC Purge_SyncQueue_trxTests.AssertRemaining @Expected = '3';
    EXEC tSQLt.AssertEquals @Expected = 2, @Actual = @Removed, @Message = N'@Removed';
    EXEC tSQLt.AssertEquals @Expected = 2, @Actual = @Archived, @Message = N'@Archived';
    EXEC tSQLt.AssertEquals @Expected = 2, @Actual = @ArchiveRows, @Message = N'rows in the archive';
    EXEC tSQLt.AssertEquals
        @Expected = 1, @Actual = @FullMatch, @Message = N'the archived item carries every value';
    EXEC tSQLt.AssertEquals
        @Expected = 1, @Actual = @BareMatch, @Message = N'the archived item without the optional values carries NULL';
END;
GO
--[@tSQLt:NoTransaction]('Purge_SyncQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Purge_SyncQueue_trxTests.[test Purge_SyncQueue_trx removes every finished item and reports the total when there are more than BatchSize]
AS
BEGIN
    DECLARE @Old DATETIME2(7) = DATEADD(HOUR, -2, SYSUTCDATETIME());
    DECLARE @Recent DATETIME2(7) = DATEADD(MINUTE, -5, SYSUTCDATETIME());
    DECLARE @RetCode INT;
    DECLARE @TranCount INT;
    DECLARE @Removed INT;
    EXEC Purge_SyncQueue_trxTests.FakeQueue;
    -- Five old finished items take three transactions of at most two: 2, 2, 1.
    EXEC Purge_SyncQueue_trxTests.AddItem @Item = 1, @Status = 'Completed', @UpdatedAt = @Old;
    EXEC Purge_SyncQueue_trxTests.AddItem @Item = 2, @Status = 'Failed', @UpdatedAt = @Old;
    EXEC Purge_SyncQueue_trxTests.AddItem @Item = 3, @Status = 'Completed', @UpdatedAt = @Old;
    EXEC Purge_SyncQueue_trxTests.AddItem @Item = 4, @Status = 'Cancelled', @UpdatedAt = @Old;
    EXEC Purge_SyncQueue_trxTests.AddItem @Item = 5, @Status = 'Completed', @UpdatedAt = @Old;
    EXEC Purge_SyncQueue_trxTests.AddItem @Item = 6, @Status = 'Pending', @UpdatedAt = @Old;
    EXEC Purge_SyncQueue_trxTests.AddItem @Item = 7, @Status = 'Completed', @UpdatedAt = @Recent;

    EXEC @RetCode = dbo.Purge_SyncQueue_trx
        @OlderThanMinutes = 60,
        @BatchSize = 2,
        @Removed = @Removed OUTPUT;
    SET @TranCount = @@TRANCOUNT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @TranCount, @Message = N'the transactions must be committed';
    EXEC Purge_SyncQueue_trxTests.AssertRemaining @Expected = '6,7';
    EXEC tSQLt.AssertEquals @Expected = 5, @Actual = @Removed, @Message = N'@Removed counts every batch';
END;
GO
--[@tSQLt:NoTransaction]('Purge_SyncQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Purge_SyncQueue_trxTests.[test Purge_SyncQueue_trx removes every finished item when their number is a multiple of BatchSize]
AS
BEGIN
    DECLARE @Old DATETIME2(7) = DATEADD(HOUR, -2, SYSUTCDATETIME());
    DECLARE @RetCode INT;
    DECLARE @Removed INT;
    EXEC Purge_SyncQueue_trxTests.FakeQueue;
    -- Two full batches, then an empty one that ends the loop.
    EXEC Purge_SyncQueue_trxTests.AddItem @Item = 1, @Status = 'Completed', @UpdatedAt = @Old;
    EXEC Purge_SyncQueue_trxTests.AddItem @Item = 2, @Status = 'Completed', @UpdatedAt = @Old;
    EXEC Purge_SyncQueue_trxTests.AddItem @Item = 3, @Status = 'Completed', @UpdatedAt = @Old;
    EXEC Purge_SyncQueue_trxTests.AddItem @Item = 4, @Status = 'Completed', @UpdatedAt = @Old;
    EXEC Purge_SyncQueue_trxTests.AddItem @Item = 5, @Status = 'Paused', @UpdatedAt = @Old;

    EXEC @RetCode = dbo.Purge_SyncQueue_trx
        @OlderThanMinutes = 60,
        @BatchSize = 2,
        @Removed = @Removed OUTPUT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC Purge_SyncQueue_trxTests.AssertRemaining @Expected = '5';
    EXEC tSQLt.AssertEquals @Expected = 4, @Actual = @Removed, @Message = N'@Removed';
END;
GO
--[@tSQLt:NoTransaction]('Purge_SyncQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Purge_SyncQueue_trxTests.[test Purge_SyncQueue_trx stops after MaxBatches and keeps the newest when more are left]
AS
BEGIN
    DECLARE @Old DATETIME2(7) = DATEADD(HOUR, -2, SYSUTCDATETIME());
    DECLARE @RetCode INT;
    DECLARE @Removed INT;
    EXEC Purge_SyncQueue_trxTests.FakeQueue;
    EXEC Purge_SyncQueue_trxTests.AddItem @Item = 1, @Status = 'Completed', @UpdatedAt = @Old;
    EXEC Purge_SyncQueue_trxTests.AddItem @Item = 2, @Status = 'Completed', @UpdatedAt = @Old;
    EXEC Purge_SyncQueue_trxTests.AddItem @Item = 3, @Status = 'Completed', @UpdatedAt = @Old;
    EXEC Purge_SyncQueue_trxTests.AddItem @Item = 4, @Status = 'Completed', @UpdatedAt = @Old;
    EXEC Purge_SyncQueue_trxTests.AddItem @Item = 5, @Status = 'Completed', @UpdatedAt = @Old;

    EXEC @RetCode = dbo.Purge_SyncQueue_trx
        @OlderThanMinutes = 60,
        @BatchSize = 2,
        @MaxBatches = 2,
        @Removed = @Removed OUTPUT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC Purge_SyncQueue_trxTests.AssertRemaining @Expected = '5', @Message = N'the oldest keys go first';
    EXEC tSQLt.AssertEquals @Expected = 4, @Actual = @Removed, @Message = N'@Removed';
END;
GO
-- The age mode takes the items that finished first first (ORDER BY UpdatedAt, then the key):
-- 1 was enqueued first but finished last, 2 finished an hour before it; both are old enough.
--[@tSQLt:NoTransaction]('Purge_SyncQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Purge_SyncQueue_trxTests.[test Purge_SyncQueue_trx removes first the item that finished first when its key is the later one]
AS
BEGIN
    DECLARE @Old DATETIME2(7) = DATEADD(HOUR, -2, SYSUTCDATETIME());
    DECLARE @Older DATETIME2(7) = DATEADD(HOUR, -3, SYSUTCDATETIME());
    DECLARE @RetCode INT;
    DECLARE @Removed INT;
    EXEC Purge_SyncQueue_trxTests.FakeQueue;
    EXEC Purge_SyncQueue_trxTests.AddItem @Item = 1, @Status = 'Completed', @UpdatedAt = @Old;
    EXEC Purge_SyncQueue_trxTests.AddItem @Item = 2, @Status = 'Completed', @UpdatedAt = @Older;

    EXEC @RetCode = dbo.Purge_SyncQueue_trx
        @OlderThanMinutes = 60,
        @BatchSize = 1,
        @MaxBatches = 1,
        @Removed = @Removed OUTPUT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC Purge_SyncQueue_trxTests.AssertRemaining
        @Expected = '1', @Message = N'the item that finished first goes first, whatever its key';
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @Removed, @Message = N'@Removed';
END;
GO
--[@tSQLt:NoTransaction]('Purge_SyncQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Purge_SyncQueue_trxTests.[test Purge_SyncQueue_trx raises 735707 and removes nothing when the age is missing or out of range]
AS
BEGIN
    DECLARE @Old DATETIME2(7) = DATEADD(HOUR, -2, SYSUTCDATETIME());
    DECLARE @ErrorNumber INT;
    DECLARE @ErrorMessage NVARCHAR(4000);
    EXEC Purge_SyncQueue_trxTests.FakeQueue;
    EXEC Purge_SyncQueue_trxTests.AddItem @Item = 1, @Status = 'Completed', @UpdatedAt = @Old;

    BEGIN TRY
        EXEC dbo.Purge_SyncQueue_trx;
    END TRY
    BEGIN CATCH
        SELECT
            @ErrorNumber = ERROR_NUMBER(),
            @ErrorMessage = ERROR_MESSAGE();
    END CATCH;
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;
    EXEC tSQLt.AssertEquals @Expected = 735707, @Actual = @ErrorNumber, @Message = N'left out';
    EXEC tSQLt.AssertLike
        @ExpectedPattern = N'%: @OlderThanMinutes is required: 1 to 52560000',
        @Actual = @ErrorMessage,
        @Message = N'left out';
    EXEC Purge_SyncQueue_trxTests.AssertRefused
        @OlderThanMinutes = NULL, @ExpectedMessage = N'%: @OlderThanMinutes is required%', @Case = N'NULL';
    EXEC Purge_SyncQueue_trxTests.AssertRefused
        @OlderThanMinutes = 0, @ExpectedMessage = N'%: @OlderThanMinutes is required%', @Case = N'0';
    EXEC Purge_SyncQueue_trxTests.AssertRefused
        @OlderThanMinutes = -1, @ExpectedMessage = N'%: @OlderThanMinutes is required%', @Case = N'-1';
    EXEC Purge_SyncQueue_trxTests.AssertRefused
        @OlderThanMinutes = 52560001, @ExpectedMessage = N'%: @OlderThanMinutes is required%', @Case = N'52560001';

    EXEC Purge_SyncQueue_trxTests.AssertRemaining @Expected = '1', @Message = N'the finished item remains';
END;
GO
--[@tSQLt:NoTransaction]('Purge_SyncQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Purge_SyncQueue_trxTests.[test Purge_SyncQueue_trx raises 735707 and removes nothing when BatchSize is out of range]
AS
BEGIN
    DECLARE @Old DATETIME2(7) = DATEADD(HOUR, -2, SYSUTCDATETIME());
    EXEC Purge_SyncQueue_trxTests.FakeQueue;
    EXEC Purge_SyncQueue_trxTests.AddItem @Item = 1, @Status = 'Completed', @UpdatedAt = @Old;

    EXEC Purge_SyncQueue_trxTests.AssertRefused
        @OlderThanMinutes = 60,
        @BatchSize = NULL,
        @ExpectedMessage = N'%: @BatchSize must be 1 to 1500',
        @Case = N'NULL';
    EXEC Purge_SyncQueue_trxTests.AssertRefused
        @OlderThanMinutes = 60,
        @BatchSize = 0,
        @ExpectedMessage = N'%: @BatchSize must be 1 to 1500',
        @Case = N'0';
    EXEC Purge_SyncQueue_trxTests.AssertRefused
        @OlderThanMinutes = 60,
        @BatchSize = 1501,
        @ExpectedMessage = N'%: @BatchSize must be 1 to 1500',
        @Case = N'1501';

    EXEC Purge_SyncQueue_trxTests.AssertRemaining @Expected = '1', @Message = N'the finished item remains';
END;
GO
--[@tSQLt:NoTransaction]('Purge_SyncQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Purge_SyncQueue_trxTests.[test Purge_SyncQueue_trx raises 735707 and removes nothing when MaxBatches is below 1 or Archive is NULL]
AS
BEGIN
    DECLARE @Old DATETIME2(7) = DATEADD(HOUR, -2, SYSUTCDATETIME());
    EXEC Purge_SyncQueue_trxTests.FakeQueue;
    EXEC Purge_SyncQueue_trxTests.AddItem @Item = 1, @Status = 'Completed', @UpdatedAt = @Old;

    EXEC Purge_SyncQueue_trxTests.AssertRefused
        @OlderThanMinutes = 60,
        @MaxBatches = 0,
        @ExpectedMessage = N'%: @MaxBatches must be 1 or more, or NULL for no limit',
        @Case = N'@MaxBatches 0';
    EXEC Purge_SyncQueue_trxTests.AssertRefused
        @OlderThanMinutes = 60,
        @Archive = NULL,
        @ExpectedMessage = N'%: @Archive must be 0 or 1',
        @Case = N'@Archive NULL';

    EXEC Purge_SyncQueue_trxTests.AssertRemaining @Expected = '1', @Message = N'the finished item remains';
END;
GO
--[@tSQLt:NoTransaction]('Purge_SyncQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Purge_SyncQueue_trxTests.[test Purge_SyncQueue_trx removes only the listed items still finished and unchanged when Keys is given]
AS
BEGIN
    DECLARE @Old DATETIME2(7) = DATEADD(HOUR, -2, SYSUTCDATETIME());
    DECLARE @Recent DATETIME2(7) = DATEADD(MINUTE, -5, SYSUTCDATETIME());
    DECLARE @Keys NVARCHAR(MAX);
    DECLARE @RetCode INT;
    DECLARE @TranCount INT;
    DECLARE @Removed INT;
    DECLARE @Archived INT;
    EXEC Purge_SyncQueue_trxTests.FakeQueue;
    -- Listed as read: 1 (old) and 2 (recent: the exact mode has no age) go; 3 changed
    -- since it was read (listed with another UpdatedAt), 4 is unfinished, 5 is not listed.
    EXEC Purge_SyncQueue_trxTests.AddItem @Item = 1, @Status = 'Completed', @UpdatedAt = @Old;
    EXEC Purge_SyncQueue_trxTests.AddItem @Item = 2, @Status = 'Failed', @UpdatedAt = @Recent;
    EXEC Purge_SyncQueue_trxTests.AddItem @Item = 3, @Status = 'Completed', @UpdatedAt = @Recent;
    EXEC Purge_SyncQueue_trxTests.AddItem @Item = 4, @Status = 'Pending', @UpdatedAt = @Old;
    EXEC Purge_SyncQueue_trxTests.AddItem @Item = 5, @Status = 'Completed', @UpdatedAt = @Old;
    SET @Keys = (
        SELECT
            q.EnqueuedAt,
            CASE WHEN DATEPART(SECOND, q.EnqueuedAt) = 3 THEN @Old ELSE q.UpdatedAt END AS UpdatedAt
        FROM dbo.SyncQueue AS q
        WHERE DATEPART(SECOND, q.EnqueuedAt) IN (1, 2, 3, 4)
        FOR JSON PATH
    );

    EXEC @RetCode = dbo.Purge_SyncQueue_trx
        @Keys = @Keys,
        @Removed = @Removed OUTPUT,
        @Archived = @Archived OUTPUT;
    SET @TranCount = @@TRANCOUNT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @TranCount, @Message = N'the transactions must be committed';
    EXEC Purge_SyncQueue_trxTests.AssertRemaining @Expected = '3,4,5';
    EXEC tSQLt.AssertEquals @Expected = 2, @Actual = @Removed, @Message = N'@Removed';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @Archived, @Message = N'@Archived';
END;
GO
--[@tSQLt:NoTransaction]('Purge_SyncQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Purge_SyncQueue_trxTests.[test Purge_SyncQueue_trx removes and archives every listed item when there are more than BatchSize]
AS
BEGIN
    DECLARE @Old DATETIME2(7) = DATEADD(HOUR, -2, SYSUTCDATETIME());
    DECLARE @Keys NVARCHAR(MAX);
    DECLARE @RetCode INT;
    DECLARE @Removed INT;
    DECLARE @Archived INT;
    DECLARE @ArchiveRows INT;
    EXEC Purge_SyncQueue_trxTests.FakeQueue;
    -- Five listed items take three transactions of at most two: 2, 2, 1.
    EXEC Purge_SyncQueue_trxTests.AddItem @Item = 1, @Status = 'Completed', @UpdatedAt = @Old;
    EXEC Purge_SyncQueue_trxTests.AddItem @Item = 2, @Status = 'Failed', @UpdatedAt = @Old;
    EXEC Purge_SyncQueue_trxTests.AddItem @Item = 3, @Status = 'Completed', @UpdatedAt = @Old;
    EXEC Purge_SyncQueue_trxTests.AddItem @Item = 4, @Status = 'Cancelled', @UpdatedAt = @Old;
    EXEC Purge_SyncQueue_trxTests.AddItem @Item = 5, @Status = 'Completed', @UpdatedAt = @Old;
    EXEC Purge_SyncQueue_trxTests.AddItem @Item = 6, @Status = 'Completed', @UpdatedAt = @Old;
    SET @Keys = (
        SELECT
            q.EnqueuedAt,
            q.UpdatedAt
        FROM dbo.SyncQueue AS q
        WHERE DATEPART(SECOND, q.EnqueuedAt) <= 5
        FOR JSON PATH
    );

    EXEC @RetCode = dbo.Purge_SyncQueue_trx
        @Keys = @Keys,
        @BatchSize = 2,
        @Archive = 1,
        @Removed = @Removed OUTPUT,
        @Archived = @Archived OUTPUT;

    SET @ArchiveRows = (SELECT COUNT(*) FROM dbo.SyncQueueArchive);
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC Purge_SyncQueue_trxTests.AssertRemaining @Expected = '6';
    EXEC tSQLt.AssertEquals @Expected = 5, @Actual = @Removed, @Message = N'@Removed counts every batch';
    EXEC tSQLt.AssertEquals @Expected = 5, @Actual = @Archived, @Message = N'@Archived';
    EXEC tSQLt.AssertEquals @Expected = 5, @Actual = @ArchiveRows, @Message = N'rows in the archive';
END;
GO
--[@tSQLt:NoTransaction]('Purge_SyncQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Purge_SyncQueue_trxTests.[test Purge_SyncQueue_trx takes the listed items in key order and passes none over when some listed stay]
AS
BEGIN
    DECLARE @Old DATETIME2(7) = DATEADD(HOUR, -2, SYSUTCDATETIME());
    DECLARE @Keys NVARCHAR(MAX);
    DECLARE @RetCode INT;
    DECLARE @Removed INT;
    EXEC Purge_SyncQueue_trxTests.FakeQueue;
    -- 1 to 7 listed, newest first; 2 and 4 changed since (listed with another UpdatedAt), so
    -- each batch of two passes one of them over: 1, 3 | 5, 6 | 7. 8 is not listed.
    EXEC Purge_SyncQueue_trxTests.AddItem @Item = 1, @Status = 'Completed', @UpdatedAt = @Old;
    EXEC Purge_SyncQueue_trxTests.AddItem @Item = 2, @Status = 'Completed', @UpdatedAt = @Old;
    EXEC Purge_SyncQueue_trxTests.AddItem @Item = 3, @Status = 'Failed', @UpdatedAt = @Old;
    EXEC Purge_SyncQueue_trxTests.AddItem @Item = 4, @Status = 'Completed', @UpdatedAt = @Old;
    EXEC Purge_SyncQueue_trxTests.AddItem @Item = 5, @Status = 'Completed', @UpdatedAt = @Old;
    EXEC Purge_SyncQueue_trxTests.AddItem @Item = 6, @Status = 'Cancelled', @UpdatedAt = @Old;
    EXEC Purge_SyncQueue_trxTests.AddItem @Item = 7, @Status = 'Completed', @UpdatedAt = @Old;
    EXEC Purge_SyncQueue_trxTests.AddItem @Item = 8, @Status = 'Completed', @UpdatedAt = @Old;
    SET @Keys = (
        SELECT
            q.EnqueuedAt,
            CASE WHEN DATEPART(SECOND, q.EnqueuedAt) IN (2, 4) THEN DATEADD(SECOND, -1, @Old) ELSE q.UpdatedAt END
                AS UpdatedAt
        FROM dbo.SyncQueue AS q
        WHERE DATEPART(SECOND, q.EnqueuedAt) <= 7
        ORDER BY q.EnqueuedAt DESC
        FOR JSON PATH
    );

    EXEC @RetCode = dbo.Purge_SyncQueue_trx
        @Keys = @Keys,
        @BatchSize = 2,
        @MaxBatches = 1,
        @Removed = @Removed OUTPUT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code, one batch';
    EXEC Purge_SyncQueue_trxTests.AssertRemaining
        @Expected = '2,4,5,6,7,8', @Message = N'the first batch takes the oldest keys, not the first listed';
    EXEC tSQLt.AssertEquals @Expected = 2, @Actual = @Removed, @Message = N'@Removed, one batch';

    EXEC @RetCode = dbo.Purge_SyncQueue_trx
        @Keys = @Keys,
        @BatchSize = 2,
        @Removed = @Removed OUTPUT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC Purge_SyncQueue_trxTests.AssertRemaining
        @Expected = '2,4,8', @Message = N'each batch goes on after the items the one before passed over';
    EXEC tSQLt.AssertEquals @Expected = 3, @Actual = @Removed, @Message = N'@Removed';
END;
GO
--[@tSQLt:NoTransaction]('Purge_SyncQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Purge_SyncQueue_trxTests.[test Purge_SyncQueue_trx removes the listed items when Keys starts with white space]
AS
BEGIN
    DECLARE @Old DATETIME2(7) = DATEADD(HOUR, -2, SYSUTCDATETIME());
    DECLARE @Keys NVARCHAR(MAX);
    DECLARE @RetCode INT;
    DECLARE @Removed INT;
    EXEC Purge_SyncQueue_trxTests.FakeQueue;
    EXEC Purge_SyncQueue_trxTests.AddItem @Item = 1, @Status = 'Completed', @UpdatedAt = @Old;
    EXEC Purge_SyncQueue_trxTests.AddItem @Item = 2, @Status = 'Completed', @UpdatedAt = @Old;
    -- A tab, a line break and a space before the array, as a pretty-printer may write it.
    SET @Keys = NCHAR(9) + NCHAR(13) + NCHAR(10) + N' ' + (
        SELECT
            q.EnqueuedAt,
            q.UpdatedAt
        FROM dbo.SyncQueue AS q
        WHERE DATEPART(SECOND, q.EnqueuedAt) = 1
        FOR JSON PATH
    );

    EXEC @RetCode = dbo.Purge_SyncQueue_trx
        @Keys = @Keys,
        @Removed = @Removed OUTPUT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    EXEC Purge_SyncQueue_trxTests.AssertRemaining @Expected = '2';
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @Removed, @Message = N'@Removed';
END;
GO
--[@tSQLt:NoTransaction]('Purge_SyncQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Purge_SyncQueue_trxTests.[test Purge_SyncQueue_trx raises 735707 and removes nothing when Keys is not a list of keys or comes with an age]
AS
BEGIN
    DECLARE @Old DATETIME2(7) = DATEADD(HOUR, -2, SYSUTCDATETIME());
    DECLARE @Listed NVARCHAR(MAX);
    EXEC Purge_SyncQueue_trxTests.FakeQueue;
    EXEC Purge_SyncQueue_trxTests.AddItem @Item = 1, @Status = 'Completed', @UpdatedAt = @Old;
    SET @Listed = (
        SELECT
            q.EnqueuedAt,
            q.UpdatedAt
        FROM dbo.SyncQueue AS q
        FOR JSON PATH
    );

    -- Each case's message names the check that refused it, and for an entry its number (from 1).
    EXEC Purge_SyncQueue_trxTests.AssertRefused
        @OlderThanMinutes = 60,
        @Keys = @Listed,
        @ExpectedMessage = N'%: give @OlderThanMinutes or @Keys, not both',
        @Case = N'an age too';
    EXEC Purge_SyncQueue_trxTests.AssertRefused
        @OlderThanMinutes = NULL,
        @Keys = N'not json',
        @ExpectedMessage = N'%: @Keys must be JSON: an array of {EnqueuedAt, UpdatedAt}',
        @Case = N'not JSON';
    EXEC Purge_SyncQueue_trxTests.AssertRefused
        @OlderThanMinutes = NULL,
        @Keys = N'{"EnqueuedAt": "2024-03-01T08:00:01", "UpdatedAt": "2024-03-01T08:00:01"}',
        @ExpectedMessage = N'%: @Keys must be an array of {EnqueuedAt, UpdatedAt}, not an object',
        @Case = N'an object, not an array';
    EXEC Purge_SyncQueue_trxTests.AssertRefused
        @OlderThanMinutes = NULL,
        @Keys = N'[{"EnqueuedAt": "2024-03-01T08:00:01", "UpdatedAt": "2024-03-01T08:00:01"}, "2024-03-01T08:00:02"]',
        @ExpectedMessage = N'%: @Keys entry 2 is not an object',
        @Case = N'an entry not an object';
    EXEC Purge_SyncQueue_trxTests.AssertRefused
        @OlderThanMinutes = NULL,
        @Keys = N'[{"EnqueuedAt": "2024-03-01T08:00:01"}]',
        @ExpectedMessage = N'%: @Keys entry 1 lacks EnqueuedAt or UpdatedAt',
        @Case = N'an entry without UpdatedAt';
    EXEC Purge_SyncQueue_trxTests.AssertRefused
        @OlderThanMinutes = NULL,
        @Keys = N'[{"EnqueuedAt": "yesterday", "UpdatedAt": "2024-03-01T08:00:01"}]',
        @ExpectedMessage = N'%: @Keys entry 1 has a time that is not ISO 8601',
        @Case = N'a time that is not ISO 8601';
    -- SQL Server would read each of these as 08:00:01, dropping the offset without a word.
    EXEC Purge_SyncQueue_trxTests.AssertRefused
        @OlderThanMinutes = NULL,
        @Keys = N'[{"EnqueuedAt": "2024-03-01T08:00:01Z", "UpdatedAt": "2024-03-01T08:00:01"}]',
        @ExpectedMessage = N'%: @Keys entry 1 has a time with an offset or Z: give it in UTC without one',
        @Case = N'a time in Z';
    EXEC Purge_SyncQueue_trxTests.AssertRefused
        @OlderThanMinutes = NULL,
        @Keys = N'[{"EnqueuedAt": "2024-03-01T08:00:01", "UpdatedAt": "2024-03-01T08:00:01+02:00"}]',
        @ExpectedMessage = N'%: @Keys entry 1 has a time with an offset or Z: give it in UTC without one',
        @Case = N'a time with a positive offset';
    EXEC Purge_SyncQueue_trxTests.AssertRefused
        @OlderThanMinutes = NULL,
        @Keys = N'[{"EnqueuedAt": "2024-03-01T08:00:01.1234567-05:00", "UpdatedAt": "2024-03-01T08:00:01"}]',
        @ExpectedMessage = N'%: @Keys entry 1 has a time with an offset or Z: give it in UTC without one',
        @Case = N'a time with a negative offset';
    EXEC Purge_SyncQueue_trxTests.AssertRefused
        @OlderThanMinutes = NULL,
        @Keys = N'[{"EnqueuedAt": "2024-03-01T08:00:01", "UpdatedAt": "2024-03-01T08:00:01"},
            {"EnqueuedAt": "2024-03-01T08:00:01", "UpdatedAt": "2024-03-01T09:00:00"}]',
        @ExpectedMessage = N'%: @Keys entry 2 lists an item that an entry before it lists',
        @Case = N'an item listed twice';

    EXEC Purge_SyncQueue_trxTests.AssertRemaining @Expected = '1', @Message = N'the finished item remains';
END;
GO
-- Outside any transaction, but with IMPLICIT_TRANSACTIONS ON, as JDBC's setAutoCommit(false)
-- leaves a session: a _trx would return with an implicit transaction still open.
--[@tSQLt:NoTransaction]('Purge_SyncQueue_trxTests.RollbackLeftOpen')
CREATE PROCEDURE Purge_SyncQueue_trxTests.[test Purge_SyncQueue_trx raises 735701 when implicit transactions are on]
AS
BEGIN
    DECLARE @ErrorNumber INT;
    DECLARE @ErrorMessage NVARCHAR(4000);
    EXEC Purge_SyncQueue_trxTests.FakeQueue;

    SET IMPLICIT_TRANSACTIONS ON;
    BEGIN TRY
        EXEC dbo.Purge_SyncQueue_trx @OlderThanMinutes = 60;
    END TRY
    BEGIN CATCH
        SELECT
            @ErrorNumber = ERROR_NUMBER(),
            @ErrorMessage = ERROR_MESSAGE();
    END CATCH;
    SET IMPLICIT_TRANSACTIONS OFF;
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;

    EXEC tSQLt.AssertEquals @Expected = 735701, @Actual = @ErrorNumber;
    EXEC tSQLt.AssertLike
        @ExpectedPattern = N'relq: dbo.Purge_SyncQueue_trx owns its transaction%', @Actual = @ErrorMessage;
END;
GO
