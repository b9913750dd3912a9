SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'Lock_DedupKeys_utxTests';
GO
-- tSQLt runs each test in a transaction, so the locks under test are that
-- transaction's; APPLOCK_MODE reads them
-- (https://learn.microsoft.com/sql/t-sql/functions/applock-mode-transact-sql).
-- The lock's name for @DedupKey on dbo.SyncQueue, as the procedure makes it.
CREATE FUNCTION Lock_DedupKeys_utxTests.LockName(@DedupKey dbo.DedupKey)
RETURNS NVARCHAR(255)
AS
BEGIN
    RETURN N'dbo.SyncQueue.DedupKey#' + CAST(CHECKSUM(@DedupKey) AS NVARCHAR(11));
END;
GO
CREATE PROCEDURE Lock_DedupKeys_utxTests.[test Lock_DedupKeys_utx holds an exclusive lock per key when given keys]
AS
BEGIN
    DECLARE @Keys dbo.DedupKeyList;
    DECLARE @RetCode INT;
    INSERT INTO @Keys (DedupKey) VALUES (N'order-1'), (N'order-2');

    EXEC @RetCode = dbo.Lock_DedupKeys_utx @Queue = N'dbo.SyncQueue', @DedupKeys = @Keys;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode;
    EXEC tSQLt.AssertEqualsString
        @Expected = N'Exclusive',
        @Actual = APPLOCK_MODE(N'public', Lock_DedupKeys_utxTests.LockName(N'order-1'), N'Transaction');
    EXEC tSQLt.AssertEqualsString
        @Expected = N'Exclusive',
        @Actual = APPLOCK_MODE(N'public', Lock_DedupKeys_utxTests.LockName(N'order-2'), N'Transaction');
    EXEC tSQLt.AssertEqualsString
        @Expected = N'NoLock',
        @Actual = APPLOCK_MODE(N'public', Lock_DedupKeys_utxTests.LockName(N'order-3'), N'Transaction');
END;
GO
-- A key given twice is locked once: one release frees it (a lock taken n times
-- needs n releases: sp_releaseapplock's remarks).
CREATE PROCEDURE Lock_DedupKeys_utxTests.[test Lock_DedupKeys_utx locks a key once when it is given twice]
AS
BEGIN
    DECLARE @Keys dbo.DedupKeyList;
    DECLARE @RetCode INT;
    DECLARE @Resource NVARCHAR(255) = Lock_DedupKeys_utxTests.LockName(N'order-1');
    INSERT INTO @Keys (DedupKey) VALUES (N'order-1'), (N'order-1');

    EXEC @RetCode = dbo.Lock_DedupKeys_utx @Queue = N'dbo.SyncQueue', @DedupKeys = @Keys;
    EXEC sys.sp_releaseapplock @Resource = @Resource, @LockOwner = 'Transaction';

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode;
    EXEC tSQLt.AssertEqualsString
        @Expected = N'NoLock',
        @Actual = APPLOCK_MODE(N'public', @Resource, N'Transaction');
END;
GO
-- Keys equal under the database's collation (as the unique DedupKey index
-- compares them) share a lock, whatever that collation: here a key and its upper
-- case, which a case-insensitive collation holds equal and a case-sensitive one not.
CREATE PROCEDURE Lock_DedupKeys_utxTests.[test Lock_DedupKeys_utx gives keys one lock when the collation holds them equal]
AS
BEGIN
    DECLARE @Keys dbo.DedupKeyList;
    DECLARE @Lower dbo.DedupKey = N'order-x';
    DECLARE @Upper dbo.DedupKey = N'ORDER-X';
    DECLARE @Locks INT;
    DECLARE @Expected INT = CASE WHEN @Lower = @Upper THEN 1 ELSE 2 END;
    INSERT INTO @Keys (DedupKey) VALUES (@Lower), (@Upper);

    EXEC dbo.Lock_DedupKeys_utx @Queue = N'dbo.SyncQueue', @DedupKeys = @Keys;

    SELECT @Locks = COUNT(DISTINCT Lock_DedupKeys_utxTests.LockName(k.DedupKey))
    FROM @Keys AS k;
    EXEC tSQLt.AssertEquals @Expected = @Expected, @Actual = @Locks;
    EXEC tSQLt.AssertEqualsString
        @Expected = N'Exclusive',
        @Actual = APPLOCK_MODE(N'public', Lock_DedupKeys_utxTests.LockName(@Upper), N'Transaction');
END;
GO
CREATE PROCEDURE Lock_DedupKeys_utxTests.[test Lock_DedupKeys_utx returns 0 when the list is empty]
AS
BEGIN
    DECLARE @Keys dbo.DedupKeyList;
    DECLARE @RetCode INT;

    EXEC @RetCode = dbo.Lock_DedupKeys_utx @Queue = N'dbo.SyncQueue', @DedupKeys = @Keys;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode;
END;
GO
CREATE PROCEDURE Lock_DedupKeys_utxTests.[test Lock_DedupKeys_utx raises 735707 when the queue is missing]
AS
BEGIN
    DECLARE @Keys dbo.DedupKeyList;
    INSERT INTO @Keys (DedupKey) VALUES (N'order-1');
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 735707, @ExpectedMessagePattern = N'%@Queue%';

    EXEC dbo.Lock_DedupKeys_utx @Queue = NULL, @DedupKeys = @Keys, @Caller = N'dbo.Add_SyncQueue_utx';
END;
GO
