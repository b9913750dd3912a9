SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.Lock_ItemKeys_utx: takes, for the caller's transaction, an exclusive
   application lock per key of @ItemKeys (a DedupKey or a GroupKey) of the queue
   @Queue, so that two transactions adding items with the same DedupKey, or to
   the same ordered group, do it one after the other, while transactions with
   other keys, or none, never wait for each other.
   - DedupKey: an enqueue or a retry checks the key under its lock, so the second
     of two transactions sees the first's item instead of both finding the key
     free (the queue's unique filtered index would refuse the second with 2601).
   - GroupKey: an enqueue into a group waits for another transaction's open
     enqueue into that group. Keys are given in a moment of their own
     (dbo.Add_<Queue>_utx), so without this a later producer could commit a
     larger key of the group first, and every claim whose group check reached the
     earlier, uncommitted item would wait for that producer's transaction.
   The lock's name is '<@Queue>.<KeyColumn>#' and CHECKSUM of the key: CHECKSUM
   gives one value to keys that are equal under their collation
   (https://learn.microsoft.com/sql/t-sql/functions/checksum-transact-sql), as
   the queue compares them, where an application lock's name is compared as
   binary, case and all
   (https://learn.microsoft.com/sql/relational-databases/system-stored-procedures/sp-getapplock-transact-sql);
   two keys with one checksum merely share a lock. The locks of one call (an
   enqueue's DedupKeys and groups together) are taken in the order of their
   names, so two calls cannot deadlock on them (two
   calls in each of two transactions, in opposite orders, can: SQL Server then
   ends one, and its caller gets 735709), and are held to the end of the
   transaction.
   @Queue: the queue's table, N'dbo.<Queue>' (1 to 200 characters).
   @ItemKeys: the keys, each with its KeyColumn, DedupKey or GroupKey
     (duplicates allowed; empty: nothing to lock).
   @Caller: the procedure to name in an error (NULL: this one).
   Returns 0; 1 on error: 735702 outside a transaction, 735707 no @Queue or a
   key of another column, 735709 a lock not granted in 10 s (another open
   transaction holds the same key). On error the caller rolls back. */
CREATE OR ALTER PROCEDURE dbo.Lock_ItemKeys_utx
    @Queue NVARCHAR(200),
    @ItemKeys dbo.ItemKeyList READONLY,
    @Caller NVARCHAR(128) = NULL
AS
BEGIN
    SET NOCOUNT ON;
    DECLARE @Proc NVARCHAR(128) = ISNULL(@Caller, N'dbo.Lock_ItemKeys_utx');
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
    IF
        EXISTS (
            SELECT 1 FROM @ItemKeys AS k
            WHERE k.KeyColumn NOT IN ('DedupKey', 'GroupKey')
        )
        BEGIN
            RAISERROR (735707, 16, 1, @Proc, N'@ItemKeys: KeyColumn must be DedupKey or GroupKey');
            GOTO EXIT_ERROR;
        END;

    INSERT INTO @Locks (LockNo, [Resource])
    SELECT
        ROW_NUMBER() OVER (ORDER BY r.[Resource]) AS LockNo,
        r.[Resource]
    FROM (
        SELECT DISTINCT
            @Queue + N'.' + CAST(k.KeyColumn AS NVARCHAR(20)) + N'#'
            + CAST(CHECKSUM(k.ItemKey) AS NVARCHAR(11)) AS [Resource]
        FROM @ItemKeys AS k
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
