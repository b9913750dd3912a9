SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'DeadLetterCount_VTests';
GO
CREATE PROCEDURE DeadLetterCount_VTests.[test DeadLetterCount_V counts per kind and per transport queue when letters of several exist]
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.DeadLetter';
    INSERT INTO dbo.DeadLetter (DeadLetterId, Kind, Queue, MessageKey, DeliveryCount, Error, DeadLetteredAt)
    VALUES
    (1, 'FifoQueue', NULL, 1, 5, N'', '2024-01-03T00:00:00'),
    (2, 'FifoQueue', NULL, 2, 5, N'', '2024-01-05T00:00:00'),
    (3, 'LifoStack', NULL, 3, 5, N'', '2024-01-04T00:00:00'),
    (4, 'TransportMessage', 'Sales', 4, 5, N'', '2024-01-01T00:00:00'),
    (5, 'TransportMessage', 'Billing', 5, 5, N'', '2024-01-02T00:00:00'),
    (6, 'TransportMessage', 'Sales', 6, 5, N'', '2024-01-06T00:00:00');
    -- Text columns of a # table take tempdb's collation unless COLLATE DATABASE_DEFAULT gives them
    -- the database's, so that comparing them with the tables' never fails on a collation conflict
    -- (https://learn.microsoft.com/sql/relational-databases/collations/set-or-change-the-column-collation).
    CREATE TABLE #Expected (
        Kind VARCHAR(30) COLLATE DATABASE_DEFAULT,
        Queue VARCHAR(255) COLLATE DATABASE_DEFAULT,
        DeadLetters BIGINT,
        LastDeadLetteredAt DATETIME2(7)
    );
    INSERT INTO #Expected (Kind, Queue, DeadLetters, LastDeadLetteredAt)
    VALUES
    ('FifoQueue', NULL, 2, '2024-01-05T00:00:00'),
    ('LifoStack', NULL, 1, '2024-01-04T00:00:00'),
    ('TransportMessage', 'Billing', 1, '2024-01-02T00:00:00'),
    ('TransportMessage', 'Sales', 2, '2024-01-06T00:00:00');

    SELECT
        c.Kind,
        c.Queue,
        c.DeadLetters,
        c.LastDeadLetteredAt
    INTO #Actual
    FROM dbo.DeadLetterCount_V AS c;

    EXEC tSQLt.AssertEqualsTable @Expected = N'#Expected', @Actual = N'#Actual';
END;
GO
CREATE PROCEDURE DeadLetterCount_VTests.[test DeadLetterCount_V has no row when there are no dead letters]
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.DeadLetter';

    SELECT c.Kind
    INTO #Actual
    FROM dbo.DeadLetterCount_V AS c;

    EXEC tSQLt.AssertEmptyTable @TableName = N'#Actual';
END;
GO
