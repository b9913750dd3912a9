SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'DeadLetter_VTests';
GO
-- A FIFO letter with a three-byte payload and a transport letter without a body.
CREATE PROCEDURE DeadLetter_VTests.AddLetters
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.DeadLetter';
    INSERT INTO dbo.DeadLetter (
        DeadLetterId, Kind, Queue, MessageKey, MessageId, CorrelationId, Headers, Payload, EnqueuedAt, DeliveryCount,
        Error, FirstFailedAt, DeadLetteredAt
    )
    VALUES
    (
        1, 'FifoQueue', NULL, 41, NULL, NULL, NULL, 0x010203, '2024-01-01T00:00:01', 5, N'boom',
        '2024-01-02T00:00:00', '2024-01-03T00:00:00'
    ),
    (
        2, 'TransportMessage', 'Sales', 42, '22222222-2222-2222-2222-222222222222', 'order-7', N'{}', NULL, NULL, 3,
        N'timeout', '2024-01-02T00:00:00', '2024-01-03T00:00:00'
    );
END;
GO
CREATE PROCEDURE DeadLetter_VTests.[test DeadLetter_V shows each letter with its payload length when letters of two kinds exist]
AS
BEGIN
    EXEC DeadLetter_VTests.AddLetters;
    -- Text columns of a # table take tempdb's collation unless COLLATE DATABASE_DEFAULT gives them
    -- the database's, so that comparing them with the tables' never fails on a collation conflict
    -- (https://learn.microsoft.com/sql/relational-databases/collations/set-or-change-the-column-collation).
    CREATE TABLE #Expected (
        DeadLetterId BIGINT,
        Kind VARCHAR(30) COLLATE DATABASE_DEFAULT,
        Queue VARCHAR(255) COLLATE DATABASE_DEFAULT,
        MessageKey BIGINT,
        CorrelationId VARCHAR(255) COLLATE DATABASE_DEFAULT,
        DeliveryCount INT,
        Error NVARCHAR(MAX) COLLATE DATABASE_DEFAULT,
        PayloadBytes BIGINT
    );
    INSERT INTO #Expected (DeadLetterId, Kind, Queue, MessageKey, CorrelationId, DeliveryCount, Error, PayloadBytes)
    VALUES
    (1, 'FifoQueue', NULL, 41, NULL, 5, N'boom', 3),
    (2, 'TransportMessage', 'Sales', 42, 'order-7', 3, N'timeout', NULL);

    SELECT
        v.DeadLetterId,
        v.Kind,
        v.Queue,
        v.MessageKey,
        v.CorrelationId,
        v.DeliveryCount,
        v.Error,
        CONVERT(BIGINT, v.PayloadBytes) AS PayloadBytes
    INTO #Actual
    FROM dbo.DeadLetter_V AS v;

    EXEC tSQLt.AssertEqualsTable @Expected = N'#Expected', @Actual = N'#Actual';
END;
GO
CREATE PROCEDURE DeadLetter_VTests.[test DeadLetter_V gives the payload itself when an operator reads one letter]
AS
BEGIN
    DECLARE @Payload VARBINARY(MAX);
    EXEC DeadLetter_VTests.AddLetters;

    SELECT @Payload = v.Payload FROM dbo.DeadLetter_V AS v
    WHERE v.DeadLetterId = 1;

    EXEC tSQLt.AssertEquals @Expected = 0x010203, @Actual = @Payload;
END;
GO
CREATE PROCEDURE DeadLetter_VTests.[test DeadLetter_V is empty when there are no dead letters]
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.DeadLetter';

    SELECT v.DeadLetterId
    INTO #Actual
    FROM dbo.DeadLetter_V AS v;

    EXEC tSQLt.AssertEmptyTable @TableName = N'#Actual';
END;
GO
