SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'Lock_ItemKeys_utxTests';
GO
-- tSQLt runs each test in a transaction, so the locks under test are that
-- transaction's; APPLOCK_MODE reads them
-- (https://learn.microsoft.com/sql/t-sql/functions/applock-mode-transact-sql).
-- The lock's name for @ItemKey in @KeyColumn of dbo.SyncQueue, as the procedure makes it.
CREATE FUNCTION Lock_ItemKeys_utxTests.LockName(@KeyColumn NVARCHAR(20), @ItemKey NVARCHAR(200))
RETURNS NVARCHAR(255)
AS
BEGIN
    RETURN N'dbo.SyncQueue.' + @KeyColumn + N'#' + CAST(CHECKSUM(@ItemKey) AS NVARCHAR(11));
END;
GO
-- Fails unless the transaction's lock on @ItemKey in @KeyColumn of dbo.SyncQueue is in
-- @Expected mode (APPLOCK_MODE: NoLock, Exclusive, ...).
CREATE PROCEDURE Lock_ItemKeys_utxTests.AssertMode
    @KeyColumn NVARCHAR(20),
    @ItemKey NVARCHAR(200),
    @Expected NVARCHAR(32),
    @Message NVARCHAR(MAX) = N''
AS
BEGIN
    DECLARE @Mode NVARCHAR(32) = APPLOCK_MODE(
        N'public', Lock_ItemKeys_utxTests.LockName(@KeyColumn, @ItemKey), N'Transaction'
    );
    EXEC tSQLt.AssertEqualsString @Expected = @Expected, @Actual = @Mode, @Message = @Message;
END;
GO
CREATE PROCEDURE Lock_ItemKeys_utxTests.[test Lock_ItemKeys_utx holds an exclusive lock per key when given keys]
AS
BEGIN
    DECLARE @Keys dbo.ItemKeyList;
    DECLARE @RetCode INT;
    INSERT INTO @Keys (KeyColumn, ItemKey) VALUES ('DedupKey', N'order-1'), ('DedupKey', N'order-2');

    EXEC @RetCode = dbo.Lock_ItemKeys_utx @Queue = N'dbo.SyncQueue', @ItemKeys = @Keys;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode;
    EXEC Lock_ItemKeys_utxTests.AssertMode @KeyColumn = N'DedupKey', @ItemKey = N'order-1', @Expected = N'Exclusive';
    EXEC Lock_ItemKeys_utxTests.AssertMode @KeyColumn = N'DedupKey', @ItemKey = N'order-2', @Expected = N'Exclusive';
    EXEC Lock_ItemKeys_utxTests.AssertMode @KeyColumn = N'DedupKey', @ItemKey = N'order-3', @Expected = N'NoLock';
    EXEC Lock_ItemKeys_utxTests.AssertMode
        @KeyColumn = N'GroupKey', @ItemKey = N'order-1', @Expected = N'NoLock',
        @Message = N'a GroupKey of the same text has a lock of its own';
END;
GO
CREATE PROCEDURE Lock_ItemKeys_utxTests.[test Lock_ItemKeys_utx locks a group and a DedupKey when given both]
AS
BEGIN
    DECLARE @Keys dbo.ItemKeyList;
    DECLARE @RetCode INT;
    INSERT INTO @Keys (KeyColumn, ItemKey) VALUES ('GroupKey', N'customer-7'), ('DedupKey', N'order-9');

    EXEC @RetCode = dbo.Lock_ItemKeys_utx @Queue = N'dbo.SyncQueue', @ItemKeys = @Keys;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode;
    EXEC Lock_ItemKeys_utxTests.AssertMode @KeyColumn = N'GroupKey', @ItemKey = N'customer-7', @Expected = N'Exclusive';
    EXEC Lock_ItemKeys_utxTests.AssertMode @KeyColumn = N'DedupKey', @ItemKey = N'customer-7', @Expected = N'NoLock';
    EXEC Lock_ItemKeys_utxTests.AssertMode @KeyColumn = N'DedupKey', @ItemKey = N'order-9', @Expected = N'Exclusive';
END;
GO
-- A key given twice is locked once: one release frees it (a lock taken n times
-- needs n releases: sp_releaseapplock's remarks).
CREATE PROCEDURE Lock_ItemKeys_utxTests.[test Lock_ItemKeys_utx locks a key once when it is given twice]
AS
BEGIN
    DECLARE @Keys dbo.ItemKeyList;
    DECLARE @RetCode INT;
    DECLARE @Resource NVARCHAR(255) = Lock_ItemKeys_utxTests.LockName(N'DedupKey', N'order-1');
    INSERT INTO @Keys (KeyColumn, ItemKey) VALUES ('DedupKey', N'order-1'), ('DedupKey', N'order-1');

    EXEC @RetCode = dbo.Lock_ItemKeys_utx @Queue = N'dbo.SyncQueue', @ItemKeys = @Keys;
    EXEC sys.sp_releaseapplock @Resource = @Resource, @LockOwner = 'Transaction';

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode;
    EXEC Lock_ItemKeys_utxTests.AssertMode @KeyColumn = N'DedupKey', @ItemKey = N'order-1', @Expected = N'NoLock';
END;
GO
-- Keys equal under the database's collation (as the queue's unique DedupKey index
-- compares them) share one lock, whatever that collation: a key, its upper case and
-- its accented form, which a case- and accent-insensitive collation holds equal and
-- a sensitive one does not. One release of the first key's lock frees all the keys
-- the collation holds equal to it: so they were locked once, under one name.
CREATE PROCEDURE Lock_ItemKeys_utxTests.[test Lock_ItemKeys_utx gives keys one lock when the collation holds them equal]
AS
BEGIN
    DECLARE @Keys dbo.ItemKeyList;
    DECLARE @Plain NVARCHAR(200) = N'cafe-order';
    DECLARE @Upper NVARCHAR(200) = N'CAFE-ORDER';
    DECLARE @Accent NVARCHAR(200) = N'caf' + NCHAR(233) + N'-order';
    DECLARE @Resource NVARCHAR(255) = Lock_ItemKeys_utxTests.LockName(N'DedupKey', @Plain);
    DECLARE @UpperExpected NVARCHAR(32) = CASE WHEN @Upper = @Plain THEN N'NoLock' ELSE N'Exclusive' END;
    DECLARE @AccentExpected NVARCHAR(32) = CASE WHEN @Accent = @Plain THEN N'NoLock' ELSE N'Exclusive' END;
    INSERT INTO @Keys (KeyColumn, ItemKey) VALUES ('DedupKey', @Plain), ('DedupKey', @Upper), ('DedupKey', @Accent);

    EXEC dbo.Lock_ItemKeys_utx @Queue = N'dbo.SyncQueue', @ItemKeys = @Keys;
    EXEC sys.sp_releaseapplock @Resource = @Resource, @LockOwner = 'Transaction';

    EXEC Lock_ItemKeys_utxTests.AssertMode
        @KeyColumn = N'DedupKey', @ItemKey = @Upper, @Expected = @UpperExpected,
        @Message = N'the upper-case key';
    EXEC Lock_ItemKeys_utxTests.AssertMode
        @KeyColumn = N'DedupKey', @ItemKey = @Accent, @Expected = @AccentExpected,
        @Message = N'the accented key';
END;
GO
CREATE PROCEDURE Lock_ItemKeys_utxTests.[test Lock_ItemKeys_utx returns 0 when the list is empty]
AS
BEGIN
    DECLARE @Keys dbo.ItemKeyList;
    DECLARE @RetCode INT;

    EXEC @RetCode = dbo.Lock_ItemKeys_utx @Queue = N'dbo.SyncQueue', @ItemKeys = @Keys;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode;
END;
GO
CREATE PROCEDURE Lock_ItemKeys_utxTests.[test Lock_ItemKeys_utx raises 735707 when the queue is missing]
AS
BEGIN
    DECLARE @Keys dbo.ItemKeyList;
    INSERT INTO @Keys (KeyColumn, ItemKey) VALUES ('DedupKey', N'order-1');
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 735707, @ExpectedMessagePattern = N'%@Queue%';

    EXEC dbo.Lock_ItemKeys_utx @Queue = NULL, @ItemKeys = @Keys;
END;
GO
CREATE PROCEDURE Lock_ItemKeys_utxTests.[test Lock_ItemKeys_utx raises 735707 when a key is of another column]
AS
BEGIN
    DECLARE @Keys dbo.ItemKeyList;
    INSERT INTO @Keys (KeyColumn, ItemKey) VALUES ('DedupKey', N'order-1'), ('EntityKey', N'C-1');
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 735707, @ExpectedMessagePattern = N'%KeyColumn%';

    EXEC dbo.Lock_ItemKeys_utx @Queue = N'dbo.SyncQueue', @ItemKeys = @Keys;
END;
GO
