SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'QueueBackoffMs_fnTests';
GO
-- Every test fakes dbo.AppSettings, so that the defaults of dbo.AppSettingInt_fn apply
-- (base 1000 ms, factor 200%, cap 3600000 ms, jitter 10%) unless the test inserts a
-- row. @Random = 0.5 is the middle of the jitter range: no jitter.
CREATE PROCEDURE QueueBackoffMs_fnTests.[test QueueBackoffMs_fn returns the base when AttemptNum is 1]
AS
BEGIN
    DECLARE @Default BIGINT;
    DECLARE @Custom BIGINT;
    EXEC tSQLt.FakeTable @TableName = N'dbo.AppSettings';

    SET @Default = dbo.QueueBackoffMs_fn('notification', 1, 0.5);
    INSERT INTO dbo.AppSettings (Param, ValInt, ValText) VALUES ('notification.backoffBaseMs', 250, NULL);
    SET @Custom = dbo.QueueBackoffMs_fn('notification', 1, 0.5);

    EXEC tSQLt.AssertEquals @Expected = 1000, @Actual = @Default, @Message = N'the default base';
    EXEC tSQLt.AssertEquals @Expected = 250, @Actual = @Custom, @Message = N'notification.backoffBaseMs 250';
END;
GO
CREATE PROCEDURE QueueBackoffMs_fnTests.[test QueueBackoffMs_fn doubles the wait for each further attempt when the factor is the default 200 percent]
AS
BEGIN
    DECLARE @Second BIGINT;
    DECLARE @Third BIGINT;
    DECLARE @Fourth BIGINT;
    EXEC tSQLt.FakeTable @TableName = N'dbo.AppSettings';

    SET @Second = dbo.QueueBackoffMs_fn('notification', 2, 0.5);
    SET @Third = dbo.QueueBackoffMs_fn('notification', 3, 0.5);
    SET @Fourth = dbo.QueueBackoffMs_fn('notification', 4, 0.5);

    EXEC tSQLt.AssertEquals @Expected = 2000, @Actual = @Second, @Message = N'attempt 2';
    EXEC tSQLt.AssertEquals @Expected = 4000, @Actual = @Third, @Message = N'attempt 3';
    EXEC tSQLt.AssertEquals @Expected = 8000, @Actual = @Fourth, @Message = N'attempt 4';
END;
GO
CREATE PROCEDURE QueueBackoffMs_fnTests.[test QueueBackoffMs_fn multiplies by backoffFactorPct when it is set]
AS
BEGIN
    DECLARE @Third BIGINT;
    EXEC tSQLt.FakeTable @TableName = N'dbo.AppSettings';
    INSERT INTO dbo.AppSettings (Param, ValInt, ValText) VALUES ('notification.backoffFactorPct', 300, NULL);

    SET @Third = dbo.QueueBackoffMs_fn('notification', 3, 0.5);

    -- 1000 * 3 * 3
    EXEC tSQLt.AssertEquals @Expected = 9000, @Actual = @Third;
END;
GO
CREATE PROCEDURE QueueBackoffMs_fnTests.[test QueueBackoffMs_fn stops at the cap when the doubled wait would pass it]
AS
BEGIN
    DECLARE @Third BIGINT;
    DECLARE @Fourth BIGINT;
    DECLARE @Tenth BIGINT;
    EXEC tSQLt.FakeTable @TableName = N'dbo.AppSettings';
    INSERT INTO dbo.AppSettings (Param, ValInt, ValText) VALUES ('notification.backoffCapMs', 5000, NULL);

    SET @Third = dbo.QueueBackoffMs_fn('notification', 3, 0.5);
    SET @Fourth = dbo.QueueBackoffMs_fn('notification', 4, 0.5);
    SET @Tenth = dbo.QueueBackoffMs_fn('notification', 10, 0.5);

    EXEC tSQLt.AssertEquals @Expected = 4000, @Actual = @Third, @Message = N'attempt 3 is under the cap';
    EXEC tSQLt.AssertEquals @Expected = 5000, @Actual = @Fourth, @Message = N'attempt 4 would be 8000';
    EXEC tSQLt.AssertEquals @Expected = 5000, @Actual = @Tenth, @Message = N'attempt 10';
END;
GO
CREATE PROCEDURE QueueBackoffMs_fnTests.[test QueueBackoffMs_fn returns the cap without overflow when AttemptNum is huge]
AS
BEGIN
    DECLARE @Default BIGINT;
    DECLARE @Largest BIGINT;
    DECLARE @Steep BIGINT;
    EXEC tSQLt.FakeTable @TableName = N'dbo.AppSettings';

    -- 2^31999 is far beyond FLOAT: the function must compare exponents.
    SET @Default = dbo.QueueBackoffMs_fn('notification', 32000, 0.5);
    SET @Largest = dbo.QueueBackoffMs_fn('notification', 32767, 0.5);
    INSERT INTO dbo.AppSettings (Param, ValInt, ValText) VALUES ('notification.backoffFactorPct', 100000, NULL);
    SET @Steep = dbo.QueueBackoffMs_fn('notification', 32000, 0.5);

    EXEC tSQLt.AssertEquals @Expected = 3600000, @Actual = @Default, @Message = N'attempt 32000';
    EXEC tSQLt.AssertEquals @Expected = 3600000, @Actual = @Largest, @Message = N'attempt 32767';
    EXEC tSQLt.AssertEquals @Expected = 3600000, @Actual = @Steep, @Message = N'attempt 32000, factor 1000x';
END;
GO
-- The jitter moves the wait by up to backoffJitterPct either way: @Random 0 is the
-- low end, 0.5 the middle, just under 1 the high end (RAND() never returns 1).
CREATE PROCEDURE QueueBackoffMs_fnTests.[test QueueBackoffMs_fn moves the wait by at most the jitter when Random spans its range]
AS
BEGIN
    DECLARE @Low BIGINT;
    DECLARE @Middle BIGINT;
    DECLARE @High BIGINT;
    DECLARE @LowCapped BIGINT;
    DECLARE @HighCapped BIGINT;
    EXEC tSQLt.FakeTable @TableName = N'dbo.AppSettings';

    SET @Low = dbo.QueueBackoffMs_fn('notification', 1, 0);
    SET @Middle = dbo.QueueBackoffMs_fn('notification', 1, 0.5);
    SET @High = dbo.QueueBackoffMs_fn('notification', 1, 0.9999999);
    -- The jitter applies after the cap, as documented: a capped wait moves too.
    SET @LowCapped = dbo.QueueBackoffMs_fn('notification', 30, 0);
    SET @HighCapped = dbo.QueueBackoffMs_fn('notification', 30, 0.9999999);

    EXEC tSQLt.AssertEquals @Expected = 900, @Actual = @Low, @Message = N'@Random 0: base - 10%';
    EXEC tSQLt.AssertEquals @Expected = 1000, @Actual = @Middle, @Message = N'@Random 0.5: no jitter';
    EXEC tSQLt.AssertEquals @Expected = 1100, @Actual = @High, @Message = N'@Random 0.9999999: base + 10%';
    EXEC tSQLt.AssertEquals @Expected = 3240000, @Actual = @LowCapped, @Message = N'capped, @Random 0';
    EXEC tSQLt.AssertEquals @Expected = 3960000, @Actual = @HighCapped, @Message = N'capped, @Random 0.9999999';
END;
GO
CREATE PROCEDURE QueueBackoffMs_fnTests.[test QueueBackoffMs_fn uses the given jitter when backoffJitterPct is set]
AS
BEGIN
    DECLARE @Low BIGINT;
    DECLARE @High BIGINT;
    EXEC tSQLt.FakeTable @TableName = N'dbo.AppSettings';
    INSERT INTO dbo.AppSettings (Param, ValInt, ValText) VALUES ('notification.backoffJitterPct', 50, NULL);

    SET @Low = dbo.QueueBackoffMs_fn('notification', 2, 0);
    SET @High = dbo.QueueBackoffMs_fn('notification', 2, 0.75);

    EXEC tSQLt.AssertEquals @Expected = 1000, @Actual = @Low, @Message = N'2000 - 50%';
    EXEC tSQLt.AssertEquals @Expected = 2500, @Actual = @High, @Message = N'2000 + 50% * 0.5';
END;
GO
CREATE PROCEDURE QueueBackoffMs_fnTests.[test QueueBackoffMs_fn returns 0 when backoffBaseMs is 0]
AS
BEGIN
    DECLARE @First BIGINT;
    DECLARE @Fifth BIGINT;
    DECLARE @Huge BIGINT;
    EXEC tSQLt.FakeTable @TableName = N'dbo.AppSettings';
    INSERT INTO dbo.AppSettings (Param, ValInt, ValText) VALUES ('notification.backoffBaseMs', 0, NULL);

    SET @First = dbo.QueueBackoffMs_fn('notification', 1, 0.9999999);
    SET @Fifth = dbo.QueueBackoffMs_fn('notification', 5, 0);
    SET @Huge = dbo.QueueBackoffMs_fn('notification', 32000, 0.5);

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @First, @Message = N'attempt 1';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @Fifth, @Message = N'attempt 5';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @Huge, @Message = N'attempt 32000';
END;
GO
CREATE PROCEDURE QueueBackoffMs_fnTests.[test QueueBackoffMs_fn counts a negative base or cap as 0 when the settings are out of range]
AS
BEGIN
    DECLARE @NegativeBase BIGINT;
    DECLARE @NegativeCap BIGINT;
    EXEC tSQLt.FakeTable @TableName = N'dbo.AppSettings';
    INSERT INTO dbo.AppSettings (Param, ValInt, ValText) VALUES ('notification.backoffBaseMs', -500, NULL);
    SET @NegativeBase = dbo.QueueBackoffMs_fn('notification', 3, 0.5);

    DELETE FROM dbo.AppSettings;
    INSERT INTO dbo.AppSettings (Param, ValInt, ValText) VALUES ('notification.backoffCapMs', -1, NULL);
    SET @NegativeCap = dbo.QueueBackoffMs_fn('notification', 3, 0.5);

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @NegativeBase, @Message = N'backoffBaseMs -500';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @NegativeCap, @Message = N'backoffCapMs -1';
END;
GO
CREATE PROCEDURE QueueBackoffMs_fnTests.[test QueueBackoffMs_fn counts a factor below 100 percent as 100 percent when the setting is out of range]
AS
BEGIN
    DECLARE @Half BIGINT;
    DECLARE @Negative BIGINT;
    EXEC tSQLt.FakeTable @TableName = N'dbo.AppSettings';
    INSERT INTO dbo.AppSettings (Param, ValInt, ValText) VALUES ('notification.backoffFactorPct', 50, NULL);
    SET @Half = dbo.QueueBackoffMs_fn('notification', 4, 0.5);

    UPDATE dbo.AppSettings SET ValInt = -200
    WHERE Param = 'notification.backoffFactorPct';
    SET @Negative = dbo.QueueBackoffMs_fn('notification', 4, 0.5);

    -- The wait never shrinks with the attempts: the base, every time.
    EXEC tSQLt.AssertEquals @Expected = 1000, @Actual = @Half, @Message = N'backoffFactorPct 50';
    EXEC tSQLt.AssertEquals @Expected = 1000, @Actual = @Negative, @Message = N'backoffFactorPct -200';
END;
GO
CREATE PROCEDURE QueueBackoffMs_fnTests.[test QueueBackoffMs_fn keeps the jitter between 0 and 100 percent when the setting is out of range]
AS
BEGIN
    DECLARE @NegativeLow BIGINT;
    DECLARE @OverLow BIGINT;
    DECLARE @OverHigh BIGINT;
    EXEC tSQLt.FakeTable @TableName = N'dbo.AppSettings';
    INSERT INTO dbo.AppSettings (Param, ValInt, ValText) VALUES ('notification.backoffJitterPct', -30, NULL);
    SET @NegativeLow = dbo.QueueBackoffMs_fn('notification', 1, 0);

    UPDATE dbo.AppSettings SET ValInt = 250
    WHERE Param = 'notification.backoffJitterPct';
    SET @OverLow = dbo.QueueBackoffMs_fn('notification', 1, 0);
    SET @OverHigh = dbo.QueueBackoffMs_fn('notification', 1, 0.75);

    EXEC tSQLt.AssertEquals @Expected = 1000, @Actual = @NegativeLow, @Message = N'backoffJitterPct -30 is no jitter';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @OverLow, @Message = N'backoffJitterPct 250 is 100%, low end';
    EXEC tSQLt.AssertEquals @Expected = 1500, @Actual = @OverHigh, @Message = N'backoffJitterPct 250 is 100%, 0.75';
END;
GO
CREATE PROCEDURE QueueBackoffMs_fnTests.[test QueueBackoffMs_fn counts AttemptNum as 1 when it is below 1 or NULL]
AS
BEGIN
    DECLARE @Zero BIGINT;
    DECLARE @Negative BIGINT;
    DECLARE @Null BIGINT;
    EXEC tSQLt.FakeTable @TableName = N'dbo.AppSettings';

    SET @Zero = dbo.QueueBackoffMs_fn('notification', 0, 0.5);
    SET @Negative = dbo.QueueBackoffMs_fn('notification', -3, 0.5);
    SET @Null = dbo.QueueBackoffMs_fn('notification', NULL, 0.5);

    EXEC tSQLt.AssertEquals @Expected = 1000, @Actual = @Zero, @Message = N'AttemptNum 0';
    EXEC tSQLt.AssertEquals @Expected = 1000, @Actual = @Negative, @Message = N'AttemptNum -3';
    EXEC tSQLt.AssertEquals @Expected = 1000, @Actual = @Null, @Message = N'AttemptNum NULL';
END;
GO
CREATE PROCEDURE QueueBackoffMs_fnTests.[test QueueBackoffMs_fn takes no jitter when Random is outside 0 to 1 or NULL]
AS
BEGIN
    DECLARE @One BIGINT;
    DECLARE @Negative BIGINT;
    DECLARE @Null BIGINT;
    EXEC tSQLt.FakeTable @TableName = N'dbo.AppSettings';

    SET @One = dbo.QueueBackoffMs_fn('notification', 1, 1);
    SET @Negative = dbo.QueueBackoffMs_fn('notification', 1, -0.5);
    SET @Null = dbo.QueueBackoffMs_fn('notification', 1, NULL);

    EXEC tSQLt.AssertEquals @Expected = 1000, @Actual = @One, @Message = N'@Random 1';
    EXEC tSQLt.AssertEquals @Expected = 1000, @Actual = @Negative, @Message = N'@Random -0.5';
    EXEC tSQLt.AssertEquals @Expected = 1000, @Actual = @Null, @Message = N'@Random NULL';
END;
GO
CREATE PROCEDURE QueueBackoffMs_fnTests.[test QueueBackoffMs_fn reads the settings of its own queue when both queues have rows]
AS
BEGIN
    DECLARE @Notification BIGINT;
    DECLARE @SyncQueue BIGINT;
    EXEC tSQLt.FakeTable @TableName = N'dbo.AppSettings';
    INSERT INTO dbo.AppSettings (Param, ValInt, ValText)
    VALUES
    ('notification.backoffBaseMs', 300, NULL),
    ('syncqueue.backoffBaseMs', 7000, NULL);

    SET @Notification = dbo.QueueBackoffMs_fn('notification', 2, 0.5);
    SET @SyncQueue = dbo.QueueBackoffMs_fn('syncqueue', 2, 0.5);

    EXEC tSQLt.AssertEquals @Expected = 600, @Actual = @Notification, @Message = N'notification';
    EXEC tSQLt.AssertEquals @Expected = 14000, @Actual = @SyncQueue, @Message = N'syncqueue';
END;
GO
