SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.Lock_DedupKeys_utx: takes, for the caller's transaction, an exclusive
   application lock per DedupKey of @DedupKeys on the queue @Queue, so that two
   transactions making the same DedupKey unfinished (an enqueue, a retry) check
   it one after the other, while transactions with other DedupKeys, or none,
   never wait for each other. The queue's unique filtered index on DedupKey
   would refuse the second of two such transactions with error 2601 instead;
   under the lock, the second sees the first's item and gets its key.
   The lock's name is '<@Queue>.DedupKey#' and CHECKSUM of the key: CHECKSUM
   gives one value to keys that are equal under their collation
   (https://learn.microsoft.com/sql/t-sql/functions/checksum-transact-sql), as
   the index compares them, where an application lock's name is compared as
   binary, case and all
   (https://learn.microsoft.com/sql/relational-databases/system-stored-procedures/sp-getapplock-transact-sql);
   two keys with one checksum merely share a lock. The locks are taken in the
   order of their names, so two callers cannot deadlock on them, and are held
   to the end of the transaction.
   @Queue: the queue's table, N'dbo.<Queue>' (1 to 200 characters).
   @DedupKeys: the keys (duplicates allowed; empty: nothing to lock).
   @Caller: the procedure to name in an error (NULL: this one).
   Returns 0; 1 on error: 735702 outside a transaction, 735707 no @Queue, 735709
   a lock not granted in 10 s (another transaction holds the same DedupKey
   unfinished and open). On error the caller rolls back. */
CREATE OR ALTER PROCEDURE dbo.Lock_DedupKeys_utx
    @Queue NVARCHAR(200),
    @DedupKeys dbo.DedupKeyList READONLY,
    @Caller NVARCHAR(128) = NULL
AS
BEGIN
    SET NOCOUNT ON;
    DECLARE @Proc NVARCHAR(128) = ISNULL(@Caller, N'dbo.Lock_DedupKeys_utx');
    DECLARE @Locks TABLE (LockNo INT NOT NULL PRIMARY KEY, [Resource] NVARCHAR(255) NOT NULL);
    DECLARE @LockNo INT = 1;
    DECLARE @Resource NVARCHAR(255);
    DECLARE @LockResult INT;
    DECLARE @ErrNo INT;
    DECLARE @RowCnt INT;

    IF (@@TRANCOUNT = 0)
        BEGIN
            RAISERROR (735702, 16, 1, @Proc);
            GOTO EXIT_ERROR;
        END;
    IF (@Queue IS NULL OR LTRIM(RTRIM(@Queue)) = N'')
        BEGIN
            RAISERROR (735707, 16, 1, @Proc, N'@Queue is required');
            GOTO EXIT_ERROR;
        END;

    INSERT INTO @Locks (LockNo, [Resource])
    SELECT
        ROW_NUMBER() OVER (ORDER BY r.[Resource]) AS LockNo,
        r.[Resource]
    FROM (
        SELECT DISTINCT @Queue + N'.DedupKey#' + CAST(CHECKSUM(k.DedupKey) AS NVARCHAR(11)) AS [Resource]
        FROM @DedupKeys AS k
    ) AS r;
    SELECT
        @RowCnt = @@ROWCOUNT,
        @ErrNo = @@ERROR;
    IF (@ErrNo <> 0) GOTO EXIT_ERROR;

    SELECT @Resource = l.[Resource] FROM @Locks AS l
    WHERE l.LockNo = @LockNo;
    WHILE (@Resource IS NOT NULL)
        BEGIN
            EXEC @LockResult = sys.sp_getapplock
                @Resource = @Resource,
                @LockMode = 'Exclusive',
                @LockOwner = 'Transaction',
                @LockTimeout = 10000
            WITH RESULT SETS NONE;
            IF (@LockResult < 0)
                BEGIN
                    RAISERROR (735709, 16, 1, @Proc, @Resource, @LockResult);
                    GOTO EXIT_ERROR;
                END;
            SET @LockNo = @LockNo + 1;
            SET @Resource = NULL;
            SELECT @Resource = l.[Resource] FROM @Locks AS l
            WHERE l.LockNo = @LockNo;
        END;
    RETURN 0;

    EXIT_ERROR:
    RETURN 1;
END;
GO
