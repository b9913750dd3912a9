SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'AppSettingInt_fnTests';
GO
-- tSQLt runs the procedures whose names start with "test ": the spaces are required.
-- Every setting of the worker lifecycle, for every queue, as the header documents it
-- (stated here again, so that a changed default fails this test).
CREATE PROCEDURE AppSettingInt_fnTests.[test AppSettingInt_fn returns the documented lifecycle defaults when no row exists]
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.AppSettings';
    SELECT
        s.Param,
        dbo.AppSettingInt_fn(s.Param) AS ValInt
    INTO #Actual
    FROM (
        VALUES
        ('notification.maxAttempts'),
        ('notification.leaseSeconds'),
        ('notification.backoffBaseMs'),
        ('notification.backoffFactorPct'),
        ('notification.backoffCapMs'),
        ('notification.backoffJitterPct'),
        ('syncqueue.maxAttempts'),
        ('syncqueue.leaseSeconds'),
        ('syncqueue.backoffBaseMs'),
        ('syncqueue.backoffFactorPct'),
        ('syncqueue.backoffCapMs'),
        ('syncqueue.backoffJitterPct')
    ) AS s(Param);
    SELECT TOP (0)
        a.Param,
        a.ValInt
    INTO #Expected
    FROM #Actual AS a;
    INSERT INTO #Expected (Param, ValInt)
    VALUES
    ('notification.maxAttempts', 3),
    ('notification.leaseSeconds', 300),
    ('notification.backoffBaseMs', 1000),
    ('notification.backoffFactorPct', 200),
    ('notification.backoffCapMs', 3600000),
    ('notification.backoffJitterPct', 10),
    ('syncqueue.maxAttempts', 3),
    ('syncqueue.leaseSeconds', 300),
    ('syncqueue.backoffBaseMs', 1000),
    ('syncqueue.backoffFactorPct', 200),
    ('syncqueue.backoffCapMs', 3600000),
    ('syncqueue.backoffJitterPct', 10);
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Expected', @Actual = N'#Actual';
END;
GO
CREATE PROCEDURE AppSettingInt_fnTests.[test AppSettingInt_fn returns the row ValInt when a row exists]
AS
BEGIN
    DECLARE @Actual INT;
    EXEC tSQLt.FakeTable @TableName = N'dbo.AppSettings';
    INSERT INTO dbo.AppSettings (Param, ValInt)
    VALUES ('notification.maxAttempts', 7);

    SET @Actual = dbo.AppSettingInt_fn('notification.maxAttempts');

    EXEC tSQLt.AssertEquals @Expected = 7, @Actual = @Actual;
END;
GO
CREATE PROCEDURE AppSettingInt_fnTests.[test AppSettingInt_fn returns the default when the row ValInt is NULL]
AS
BEGIN
    DECLARE @Actual INT;
    EXEC tSQLt.FakeTable @TableName = N'dbo.AppSettings';
    INSERT INTO dbo.AppSettings (Param, ValInt, ValText)
    VALUES ('syncqueue.maxAttempts', NULL, N'five');

    SET @Actual = dbo.AppSettingInt_fn('syncqueue.maxAttempts');

    EXEC tSQLt.AssertEquals @Expected = 3, @Actual = @Actual;
END;
GO
CREATE PROCEDURE AppSettingInt_fnTests.[test AppSettingInt_fn returns NULL when the name is unknown]
AS
BEGIN
    DECLARE @Actual INT;
    EXEC tSQLt.FakeTable @TableName = N'dbo.AppSettings';

    SET @Actual = dbo.AppSettingInt_fn('nosuchqueue.maxAttempts');

    EXEC tSQLt.AssertEquals @Expected = NULL, @Actual = @Actual;
END;
GO
-- The dead-letter maximum of every kind of message queue that has one (dbo.MessageKind),
-- stated here again, so that a changed default fails this test.
CREATE PROCEDURE AppSettingInt_fnTests.[test AppSettingInt_fn returns 5 maxDeliveries for each message kind when no row exists]
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.AppSettings';
    SELECT
        s.Param,
        dbo.AppSettingInt_fn(s.Param) AS ValInt
    INTO #Actual
    FROM (
        VALUES
        ('fifoqueue.maxDeliveries'),
        ('strictfifoqueue.maxDeliveries'),
        ('lifostack.maxDeliveries'),
        ('pendingqueue.maxDeliveries'),
        ('transportmessage.maxDeliveries'),
        ('heapqueue.maxDeliveries')
    ) AS s(Param);
    SELECT TOP (0)
        a.Param,
        a.ValInt
    INTO #Expected
    FROM #Actual AS a;
    -- The heap's messages have no key to count failures by: it has no maximum.
    INSERT INTO #Expected (Param, ValInt)
    VALUES
    ('fifoqueue.maxDeliveries', 5),
    ('strictfifoqueue.maxDeliveries', 5),
    ('lifostack.maxDeliveries', 5),
    ('pendingqueue.maxDeliveries', 5),
    ('transportmessage.maxDeliveries', 5),
    ('heapqueue.maxDeliveries', NULL);
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Expected', @Actual = N'#Actual';
END;
GO
