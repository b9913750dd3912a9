SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.Add_SyncQueue_utx: enqueues sync jobs, one per item of @Items, inside the
   caller's transaction, in one statement. Every item is checked first; one
   bad item and nothing is written. Keys come under an application lock on
   'dbo.SyncQueue' held to the end of the transaction: the first is the later
   of now and the last key plus a microsecond (dbo.QueueNextKey_fn), and item n
   (in ItemNo order, from 0) gets the first plus n microseconds, so a call's
   keys are contiguous, increasing, and never shared with another producer's.
   @Items: the jobs: ItemNo, Type (a row of dbo.SyncQueueType), EntityKey,
     Payload (JSON or NULL), ScheduledFor (UTC; NULL: now). At most 4,000: a bigger insert would
     escalate to a table lock and stall every worker until the caller commits.
   @FirstEnqueuedAt: OUTPUT, the key of the first item.
   @LastEnqueuedAt: OUTPUT, the key of the last item.
   Returns 0; 1 on error: 50002 outside a transaction, 50003, 50007 an invalid
   item (named by its ItemNo), 50009 the enqueue lock was not granted. On
   error the caller rolls back. */
CREATE OR ALTER PROCEDURE dbo.Add_SyncQueue_utx
    @Items dbo.SyncQueueItemList READONLY,
    @FirstEnqueuedAt dbo.[_Timestamp] = NULL OUTPUT,
    @LastEnqueuedAt dbo.[_Timestamp] = NULL OUTPUT
AS
BEGIN
    SET NOCOUNT ON;
    SET TRANSACTION ISOLATION LEVEL READ COMMITTED; -- SQL Server restores the caller's level on return
    DECLARE @Proc NVARCHAR(128) = N'dbo.Add_SyncQueue_utx';
    -- A bigger INSERT would escalate to a table lock at 5,000 row locks and stall
    -- every worker until the caller commits: send more in several calls.
    DECLARE @MaxItems INT = 4000;
    DECLARE @ItemCount INT;
    DECLARE @BadItem INT;
    DECLARE @Why NVARCHAR(200);
    DECLARE @Last dbo.[_Timestamp];
    DECLARE @LockResult INT;
    DECLARE @ErrNo INT;
    DECLARE @RowCnt INT;

    SELECT
        @FirstEnqueuedAt = NULL,
        @LastEnqueuedAt = NULL;
    IF (@@TRANCOUNT = 0)
        BEGIN
            RAISERROR (50002, 16, 1, N'dbo.Add_SyncQueue_utx');
            GOTO EXIT_ERROR;
        END;
    SELECT @ItemCount = COUNT(*) FROM @Items;
    IF (@ItemCount = 0 OR @ItemCount > @MaxItems)
        BEGIN
            RAISERROR (50007, 16, 1, @Proc, N'@Items must hold 1 to 4,000 items');
            GOTO EXIT_ERROR;
        END;
    SELECT TOP (1)
        @BadItem = i.ItemNo,
        @Why = CASE
            WHEN i.[Type] IS NULL THEN N'Type is required'
            WHEN t.[Type] IS NULL THEN N'Type is not one of dbo.SyncQueueType'
            WHEN i.EntityKey IS NULL OR LTRIM(RTRIM(i.EntityKey)) = N'' THEN N'EntityKey is required'
            ELSE N'Payload is not valid JSON'
        END
    FROM @Items AS i
    LEFT JOIN dbo.SyncQueueType AS t ON i.[Type] = t.[Type]
    WHERE
        t.[Type] IS NULL
        OR i.EntityKey IS NULL
        OR LTRIM(RTRIM(i.EntityKey)) = N''
        OR (i.Payload IS NOT NULL AND ISJSON(i.Payload) = 0)
    ORDER BY i.ItemNo;
    IF (@BadItem IS NOT NULL)
        BEGIN
            SET @Why = N'item ' + CAST(@BadItem AS NVARCHAR(12)) + N': ' + @Why;
            RAISERROR (50007, 16, 1, @Proc, @Why);
            GOTO EXIT_ERROR;
        END;

    EXEC @LockResult = sys.sp_getapplock
        @Resource = N'dbo.SyncQueue',
        @LockMode = 'Exclusive',
        @LockOwner = 'Transaction',
        @LockTimeout = 10000;
    IF (@LockResult < 0)
        BEGIN
            RAISERROR (50009, 16, 1, @Proc, N'dbo.SyncQueue', @LockResult);
            GOTO EXIT_ERROR;
        END;
    SELECT @Last = MAX(q.EnqueuedAt) FROM dbo.SyncQueue AS q;
    SET @FirstEnqueuedAt = dbo.QueueNextKey_fn(@Last);
    SET @LastEnqueuedAt = DATEADD(MICROSECOND, @ItemCount - 1, @FirstEnqueuedAt);

    WITH numbered AS (
        SELECT
            i.[Type],
            i.EntityKey,
            i.Payload,
            i.ScheduledFor,
            DATEADD(
                MICROSECOND,
                CAST(ROW_NUMBER() OVER (ORDER BY i.ItemNo) - 1 AS INT),
                @FirstEnqueuedAt
            ) AS EnqueuedAt
        FROM @Items AS i
    )

    INSERT INTO dbo.SyncQueue (EnqueuedAt, [Type], EntityKey, Payload, ScheduledFor, UpdatedAt)
    SELECT
        n.EnqueuedAt,
        n.[Type],
        n.EntityKey,
        n.Payload,
        ISNULL(n.ScheduledFor, n.EnqueuedAt) AS ScheduledFor,
        n.EnqueuedAt AS UpdatedAt
    FROM numbered AS n;
    SELECT
        @RowCnt = @@ROWCOUNT,
        @ErrNo = @@ERROR;
    IF (@ErrNo <> 0) GOTO EXIT_ERROR;
    IF (@RowCnt <> @ItemCount)
        BEGIN
            RAISERROR (50003, 16, 1, @Proc, @ItemCount, @RowCnt);
            GOTO EXIT_ERROR;
        END;
    RETURN 0;

    EXIT_ERROR:
    RETURN 1;
END;
GO
