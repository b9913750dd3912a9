SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'Add_Notification_ResetPassword_utxTests';
GO
-- The four tables an enqueue writes, faked with their defaults: the procedure
-- relies on them for Status (Pending), AttemptNum (0), Response and Error.
CREATE PROCEDURE Add_Notification_ResetPassword_utxTests.FakeNotificationTables
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.Notification', @Defaults = 1;
    EXEC tSQLt.FakeTable @TableName = N'dbo.Notification_ResetPassword', @Defaults = 1;
    EXEC tSQLt.FakeTable @TableName = N'dbo.Notification_Email', @Defaults = 1;
    EXEC tSQLt.FakeTable @TableName = N'dbo.Notification_Sms', @Defaults = 1;
END;
GO
CREATE PROCEDURE Add_Notification_ResetPassword_utxTests.AssertNothingWritten
AS
BEGIN
    EXEC tSQLt.AssertEmptyTable @TableName = N'dbo.Notification';
    EXEC tSQLt.AssertEmptyTable @TableName = N'dbo.Notification_ResetPassword';
    EXEC tSQLt.AssertEmptyTable @TableName = N'dbo.Notification_Email';
    EXEC tSQLt.AssertEmptyTable @TableName = N'dbo.Notification_Sms';
END;
GO
-- Run after each NoTransaction test: a procedure that raised an error inside
-- tSQLt's TRY...CATCH may have left a transaction open.
-- Named in each NoTransaction annotation. Not called CleanUp: tSQLt runs a class's CleanUp
-- after such tests by itself, and this would run twice.
CREATE PROCEDURE Add_Notification_ResetPassword_utxTests.RollbackLeftOpen
AS
BEGIN
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;
END;
GO
CREATE PROCEDURE Add_Notification_ResetPassword_utxTests.[test Add_Notification_ResetPassword_utx writes a pending notification when given an email address]
AS
BEGIN
    DECLARE @RetCode INT;
    DECLARE @EnqueuedAt DATETIME2(7);
    EXEC Add_Notification_ResetPassword_utxTests.FakeNotificationTables;

    EXEC @RetCode = dbo.Add_Notification_ResetPassword_utx
        @UserID = 42,
        @Username = N'alice',
        @OTP = 'A1B2C3',
        @EmailTo = N'alice@example.com',
        @EnqueuedAt = @EnqueuedAt OUTPUT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode;
    IF @EnqueuedAt IS NULL
        EXEC tSQLt.Fail @Message0 = N'@EnqueuedAt should hand back the new key';

    SELECT
        n.EnqueuedAt,
        n.[Type],
        n.[Status],
        n.[Step],
        n.AttemptNum,
        n.StartedAt,
        n.Duration,
        n.ScheduledFor,
        n.UpdatedAt
    INTO #Actual
    FROM dbo.Notification AS n;
    SELECT TOP (0)
        a.EnqueuedAt,
        a.[Type],
        a.[Status],
        a.[Step],
        a.AttemptNum,
        a.StartedAt,
        a.Duration,
        a.ScheduledFor,
        a.UpdatedAt
    INTO #Expected
    FROM #Actual AS a;
    INSERT INTO #Expected (
        EnqueuedAt, [Type], [Status], [Step], AttemptNum, StartedAt, Duration, ScheduledFor, UpdatedAt
    )
    VALUES (@EnqueuedAt, 'ResetPassword', 'Pending', NULL, 0, NULL, NULL, @EnqueuedAt, @EnqueuedAt);
    EXEC tSQLt.AssertEqualsTable @Expected = N'#Expected', @Actual = N'#Actual', @Message = N'dbo.Notification';

    SELECT
        rp.EnqueuedAt,
        rp.OTP,
        rp.UserID,
        rp.Username
    INTO #ActualSubtype
    FROM dbo.Notification_ResetPassword AS rp;
    SELECT TOP (0)
        a.EnqueuedAt,
        a.OTP,
        a.UserID,
        a.Username
    INTO #ExpectedSubtype
    FROM #ActualSubtype AS a;
    INSERT INTO #ExpectedSubtype (EnqueuedAt, OTP, UserID, Username)
    VALUES (@EnqueuedAt, 'A1B2C3', 42, N'alice');
    EXEC tSQLt.AssertEqualsTable
        @Expected = N'#ExpectedSubtype',
        @Actual = N'#ActualSubtype',
        @Message = N'dbo.Notification_ResetPassword';

    SELECT
        e.EnqueuedAt,
        e.EmailTo,
        e.PreferredLanguage,
        e.Response,
        e.Error
    INTO #ActualEmail
    FROM dbo.Notification_Email AS e;
    SELECT TOP (0)
        a.EnqueuedAt,
        a.EmailTo,
        a.PreferredLanguage,
        a.Response,
        a.Error
    INTO #ExpectedEmail
    FROM #ActualEmail AS a;
    INSERT INTO #ExpectedEmail (EnqueuedAt, EmailTo, PreferredLanguage, Response, Error)
    VALUES (@EnqueuedAt, N'alice@example.com', N'en', N'', N'');
    EXEC tSQLt.AssertEqualsTable
        @Expected = N'#ExpectedEmail',
        @Actual = N'#ActualEmail',
        @Message = N'dbo.Notification_Email';

    EXEC tSQLt.AssertEmptyTable @TableName = N'dbo.Notification_Sms';
END;
GO
CREATE PROCEDURE Add_Notification_ResetPassword_utxTests.[test Add_Notification_ResetPassword_utx writes both channel rows when given an email address and a phone number]
AS
BEGIN
    DECLARE @RetCode INT;
    DECLARE @EnqueuedAt DATETIME2(7);
    EXEC Add_Notification_ResetPassword_utxTests.FakeNotificationTables;

    EXEC @RetCode = dbo.Add_Notification_ResetPassword_utx
        @UserID = 7,
        @Username = N'bob',
        @OTP = '9876',
        @EmailTo = N'bob@example.org',
        @PreferredLanguage = N'de-CH',
        @PhoneNumber = '+41445550123',
        @EnqueuedAt = @EnqueuedAt OUTPUT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode;
    IF @EnqueuedAt IS NULL
        EXEC tSQLt.Fail @Message0 = N'@EnqueuedAt should hand back the new key';

    SELECT
        n.EnqueuedAt,
        n.[Type]
    INTO #ActualBase
    FROM dbo.Notification AS n;
    SELECT TOP (0)
        a.EnqueuedAt,
        a.[Type]
    INTO #ExpectedBase
    FROM #ActualBase AS a;
    INSERT INTO #ExpectedBase (EnqueuedAt, [Type]) VALUES (@EnqueuedAt, 'ResetPassword');
    EXEC tSQLt.AssertEqualsTable @Expected = N'#ExpectedBase', @Actual = N'#ActualBase', @Message = N'dbo.Notification';

    SELECT
        e.EnqueuedAt,
        e.EmailTo,
        e.PreferredLanguage
    INTO #ActualEmail
    FROM dbo.Notification_Email AS e;
    SELECT TOP (0)
        a.EnqueuedAt,
        a.EmailTo,
        a.PreferredLanguage
    INTO #ExpectedEmail
    FROM #ActualEmail AS a;
    INSERT INTO #ExpectedEmail (EnqueuedAt, EmailTo, PreferredLanguage)
    VALUES (@EnqueuedAt, N'bob@example.org', N'de-CH');
    EXEC tSQLt.AssertEqualsTable
        @Expected = N'#ExpectedEmail',
        @Actual = N'#ActualEmail',
        @Message = N'dbo.Notification_Email';

    SELECT
        s.EnqueuedAt,
        s.PhoneNumber,
        s.Response,
        s.Error
    INTO #ActualSms
    FROM dbo.Notification_Sms AS s;
    SELECT TOP (0)
        a.EnqueuedAt,
        a.PhoneNumber,
        a.Response,
        a.Error
    INTO #ExpectedSms
    FROM #ActualSms AS a;
    INSERT INTO #ExpectedSms (EnqueuedAt, PhoneNumber, Response, Error)
    VALUES (@EnqueuedAt, '+41445550123', N'', N'');
    EXEC tSQLt.AssertEqualsTable
        @Expected = N'#ExpectedSms', @Actual = N'#ActualSms', @Message = N'dbo.Notification_Sms';
END;
GO
CREATE PROCEDURE Add_Notification_ResetPassword_utxTests.[test Add_Notification_ResetPassword_utx writes no email row when only a phone number is given]
AS
BEGIN
    DECLARE @RetCode INT;
    DECLARE @EnqueuedAt DATETIME2(7);
    DECLARE @SmsKey DATETIME2(7);
    DECLARE @SubtypeKey DATETIME2(7);
    EXEC Add_Notification_ResetPassword_utxTests.FakeNotificationTables;

    EXEC @RetCode = dbo.Add_Notification_ResetPassword_utx
        @UserID = 7,
        @Username = N'bob',
        @OTP = '9876',
        @PhoneNumber = '+14155550123',
        @EnqueuedAt = @EnqueuedAt OUTPUT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode;
    IF @EnqueuedAt IS NULL
        EXEC tSQLt.Fail @Message0 = N'@EnqueuedAt should hand back the new key';
    SELECT @SmsKey = s.EnqueuedAt
    FROM dbo.Notification_Sms AS s
    WHERE s.PhoneNumber = '+14155550123';
    SELECT @SubtypeKey = rp.EnqueuedAt
    FROM dbo.Notification_ResetPassword AS rp
    WHERE rp.UserID = 7;
    EXEC tSQLt.AssertEquals @Expected = @EnqueuedAt, @Actual = @SmsKey, @Message = N'dbo.Notification_Sms';
    EXEC tSQLt.AssertEquals
        @Expected = @EnqueuedAt, @Actual = @SubtypeKey, @Message = N'dbo.Notification_ResetPassword';
    EXEC tSQLt.AssertEmptyTable @TableName = N'dbo.Notification_Email';
END;
GO
CREATE PROCEDURE Add_Notification_ResetPassword_utxTests.[test Add_Notification_ResetPassword_utx raises 735707 and writes nothing when UserID is NULL]
AS
BEGIN
    DECLARE @ErrorNumber INT;
    DECLARE @ErrorMessage NVARCHAR(4000);
    EXEC Add_Notification_ResetPassword_utxTests.FakeNotificationTables;

    BEGIN TRY
        EXEC dbo.Add_Notification_ResetPassword_utx
            @UserID = NULL,
            @Username = N'alice',
            @OTP = 'A1B2C3',
            @EmailTo = N'alice@example.com';
    END TRY
    BEGIN CATCH
        SELECT
            @ErrorNumber = ERROR_NUMBER(),
            @ErrorMessage = ERROR_MESSAGE();
    END CATCH;

    EXEC tSQLt.AssertEquals @Expected = 735707, @Actual = @ErrorNumber;
    EXEC tSQLt.AssertLike @ExpectedPattern = N'%@UserID%', @Actual = @ErrorMessage;
    EXEC Add_Notification_ResetPassword_utxTests.AssertNothingWritten;
END;
GO
CREATE PROCEDURE Add_Notification_ResetPassword_utxTests.[test Add_Notification_ResetPassword_utx raises 735707 and writes nothing when UserID is zero]
AS
BEGIN
    DECLARE @ErrorNumber INT;
    DECLARE @ErrorMessage NVARCHAR(4000);
    EXEC Add_Notification_ResetPassword_utxTests.FakeNotificationTables;

    BEGIN TRY
        EXEC dbo.Add_Notification_ResetPassword_utx
            @UserID = 0,
            @Username = N'alice',
            @OTP = 'A1B2C3',
            @EmailTo = N'alice@example.com';
    END TRY
    BEGIN CATCH
        SELECT
            @ErrorNumber = ERROR_NUMBER(),
            @ErrorMessage = ERROR_MESSAGE();
    END CATCH;

    EXEC tSQLt.AssertEquals @Expected = 735707, @Actual = @ErrorNumber;
    EXEC tSQLt.AssertLike @ExpectedPattern = N'%@UserID%', @Actual = @ErrorMessage;
    EXEC Add_Notification_ResetPassword_utxTests.AssertNothingWritten;
END;
GO
CREATE PROCEDURE Add_Notification_ResetPassword_utxTests.[test Add_Notification_ResetPassword_utx raises 735707 and writes nothing when Username is blank]
AS
BEGIN
    DECLARE @ErrorNumber INT;
    DECLARE @ErrorMessage NVARCHAR(4000);
    EXEC Add_Notification_ResetPassword_utxTests.FakeNotificationTables;

    BEGIN TRY
        EXEC dbo.Add_Notification_ResetPassword_utx
            @UserID = 42,
            @Username = N'   ',
            @OTP = 'A1B2C3',
            @EmailTo = N'alice@example.com';
    END TRY
    BEGIN CATCH
        SELECT
            @ErrorNumber = ERROR_NUMBER(),
            @ErrorMessage = ERROR_MESSAGE();
    END CATCH;

    EXEC tSQLt.AssertEquals @Expected = 735707, @Actual = @ErrorNumber;
    EXEC tSQLt.AssertLike @ExpectedPattern = N'%@Username%', @Actual = @ErrorMessage;
    EXEC Add_Notification_ResetPassword_utxTests.AssertNothingWritten;
END;
GO
CREATE PROCEDURE Add_Notification_ResetPassword_utxTests.[test Add_Notification_ResetPassword_utx raises 735707 and writes nothing when OTP is too short]
AS
BEGIN
    DECLARE @ErrorNumber INT;
    DECLARE @ErrorMessage NVARCHAR(4000);
    EXEC Add_Notification_ResetPassword_utxTests.FakeNotificationTables;

    BEGIN TRY
        EXEC dbo.Add_Notification_ResetPassword_utx
            @UserID = 42,
            @Username = N'alice',
            @OTP = 'A1B',
            @EmailTo = N'alice@example.com';
    END TRY
    BEGIN CATCH
        SELECT
            @ErrorNumber = ERROR_NUMBER(),
            @ErrorMessage = ERROR_MESSAGE();
    END CATCH;

    EXEC tSQLt.AssertEquals @Expected = 735707, @Actual = @ErrorNumber;
    EXEC tSQLt.AssertLike @ExpectedPattern = N'%@OTP%', @Actual = @ErrorMessage;
    EXEC Add_Notification_ResetPassword_utxTests.AssertNothingWritten;
END;
GO
CREATE PROCEDURE Add_Notification_ResetPassword_utxTests.[test Add_Notification_ResetPassword_utx raises 735707 and writes nothing when OTP has punctuation]
AS
BEGIN
    DECLARE @ErrorNumber INT;
    DECLARE @ErrorMessage NVARCHAR(4000);
    EXEC Add_Notification_ResetPassword_utxTests.FakeNotificationTables;

    BEGIN TRY
        EXEC dbo.Add_Notification_ResetPassword_utx
            @UserID = 42,
            @Username = N'alice',
            @OTP = 'A1-B2C3',
            @EmailTo = N'alice@example.com';
    END TRY
    BEGIN CATCH
        SELECT
            @ErrorNumber = ERROR_NUMBER(),
            @ErrorMessage = ERROR_MESSAGE();
    END CATCH;

    EXEC tSQLt.AssertEquals @Expected = 735707, @Actual = @ErrorNumber;
    EXEC tSQLt.AssertLike @ExpectedPattern = N'%@OTP%', @Actual = @ErrorMessage;
    EXEC Add_Notification_ResetPassword_utxTests.AssertNothingWritten;
END;
GO
CREATE PROCEDURE Add_Notification_ResetPassword_utxTests.[test Add_Notification_ResetPassword_utx raises 735707 and writes nothing when OTP ends in a space]
AS
BEGIN
    DECLARE @ErrorNumber INT;
    DECLARE @ErrorMessage NVARCHAR(4000);
    EXEC Add_Notification_ResetPassword_utxTests.FakeNotificationTables;

    BEGIN TRY
        EXEC dbo.Add_Notification_ResetPassword_utx
            @UserID = 42,
            @Username = N'alice',
            @OTP = 'A1B2C3 ',
            @EmailTo = N'alice@example.com';
    END TRY
    BEGIN CATCH
        SELECT
            @ErrorNumber = ERROR_NUMBER(),
            @ErrorMessage = ERROR_MESSAGE();
    END CATCH;

    EXEC tSQLt.AssertEquals @Expected = 735707, @Actual = @ErrorNumber;
    EXEC tSQLt.AssertLike @ExpectedPattern = N'%@OTP%', @Actual = @ErrorMessage;
    EXEC Add_Notification_ResetPassword_utxTests.AssertNothingWritten;
END;
GO
CREATE PROCEDURE Add_Notification_ResetPassword_utxTests.[test Add_Notification_ResetPassword_utx raises 735707 and writes nothing when OTP is too long]
AS
BEGIN
    -- The parameter is wider than its column: a longer value must be refused,
    -- not cut to fit.
    DECLARE @ErrorNumber INT;
    DECLARE @ErrorMessage NVARCHAR(4000);
    EXEC Add_Notification_ResetPassword_utxTests.FakeNotificationTables;

    BEGIN TRY
        EXEC dbo.Add_Notification_ResetPassword_utx
            @UserID = 42,
            @Username = N'alice',
            @OTP = 'A1B2C3D4E5F',
            @EmailTo = N'alice@example.com';
    END TRY
    BEGIN CATCH
        SELECT
            @ErrorNumber = ERROR_NUMBER(),
            @ErrorMessage = ERROR_MESSAGE();
    END CATCH;

    EXEC tSQLt.AssertEquals @Expected = 735707, @Actual = @ErrorNumber;
    EXEC tSQLt.AssertLike @ExpectedPattern = N'%@OTP%', @Actual = @ErrorMessage;
    EXEC Add_Notification_ResetPassword_utxTests.AssertNothingWritten;
END;
GO
CREATE PROCEDURE Add_Notification_ResetPassword_utxTests.[test Add_Notification_ResetPassword_utx raises 735707 and writes nothing when Username is over 128 characters]
AS
BEGIN
    -- The parameter is wider than its column: a longer value must be refused,
    -- not cut to fit.
    DECLARE @Username NVARCHAR(400) = REPLICATE(N'a', 129);
    DECLARE @ErrorNumber INT;
    DECLARE @ErrorMessage NVARCHAR(4000);
    EXEC Add_Notification_ResetPassword_utxTests.FakeNotificationTables;

    BEGIN TRY
        EXEC dbo.Add_Notification_ResetPassword_utx
            @UserID = 42,
            @Username = @Username,
            @OTP = 'A1B2C3',
            @EmailTo = N'alice@example.com';
    END TRY
    BEGIN CATCH
        SELECT
            @ErrorNumber = ERROR_NUMBER(),
            @ErrorMessage = ERROR_MESSAGE();
    END CATCH;

    EXEC tSQLt.AssertEquals @Expected = 735707, @Actual = @ErrorNumber;
    EXEC tSQLt.AssertLike @ExpectedPattern = N'%@Username%', @Actual = @ErrorMessage;
    EXEC Add_Notification_ResetPassword_utxTests.AssertNothingWritten;
END;
GO
CREATE PROCEDURE Add_Notification_ResetPassword_utxTests.[test Add_Notification_ResetPassword_utx raises 735707 and writes nothing when EmailTo is over 254 characters]
AS
BEGIN
    -- The parameter is wider than its column: a longer value must be refused,
    -- not cut to fit.
    DECLARE @EmailTo NVARCHAR(400) = REPLICATE(N'a', 250) + N'@example.com';
    DECLARE @ErrorNumber INT;
    DECLARE @ErrorMessage NVARCHAR(4000);
    EXEC Add_Notification_ResetPassword_utxTests.FakeNotificationTables;

    BEGIN TRY
        EXEC dbo.Add_Notification_ResetPassword_utx
            @UserID = 42,
            @Username = N'alice',
            @OTP = 'A1B2C3',
            @EmailTo = @EmailTo;
    END TRY
    BEGIN CATCH
        SELECT
            @ErrorNumber = ERROR_NUMBER(),
            @ErrorMessage = ERROR_MESSAGE();
    END CATCH;

    EXEC tSQLt.AssertEquals @Expected = 735707, @Actual = @ErrorNumber;
    EXEC tSQLt.AssertLike @ExpectedPattern = N'%@EmailTo is not%', @Actual = @ErrorMessage;
    EXEC Add_Notification_ResetPassword_utxTests.AssertNothingWritten;
END;
GO
CREATE PROCEDURE Add_Notification_ResetPassword_utxTests.[test Add_Notification_ResetPassword_utx raises 735707 and writes nothing when PhoneNumber has 16 digits]
AS
BEGIN
    -- The parameter is wider than its column: a longer value must be refused,
    -- not cut to fit.
    DECLARE @ErrorNumber INT;
    DECLARE @ErrorMessage NVARCHAR(4000);
    EXEC Add_Notification_ResetPassword_utxTests.FakeNotificationTables;

    BEGIN TRY
        EXEC dbo.Add_Notification_ResetPassword_utx
            @UserID = 42,
            @Username = N'alice',
            @OTP = 'A1B2C3',
            @PhoneNumber = '+1415555012345678';
    END TRY
    BEGIN CATCH
        SELECT
            @ErrorNumber = ERROR_NUMBER(),
            @ErrorMessage = ERROR_MESSAGE();
    END CATCH;

    EXEC tSQLt.AssertEquals @Expected = 735707, @Actual = @ErrorNumber;
    EXEC tSQLt.AssertLike @ExpectedPattern = N'%@PhoneNumber%', @Actual = @ErrorMessage;
    EXEC Add_Notification_ResetPassword_utxTests.AssertNothingWritten;
END;
GO
CREATE PROCEDURE Add_Notification_ResetPassword_utxTests.[test Add_Notification_ResetPassword_utx raises 735707 and writes nothing when no channel is given]
AS
BEGIN
    DECLARE @ErrorNumber INT;
    DECLARE @ErrorMessage NVARCHAR(4000);
    EXEC Add_Notification_ResetPassword_utxTests.FakeNotificationTables;

    BEGIN TRY
        EXEC dbo.Add_Notification_ResetPassword_utx
            @UserID = 42,
            @Username = N'alice',
            @OTP = 'A1B2C3';
    END TRY
    BEGIN CATCH
        SELECT
            @ErrorNumber = ERROR_NUMBER(),
            @ErrorMessage = ERROR_MESSAGE();
    END CATCH;

    EXEC tSQLt.AssertEquals @Expected = 735707, @Actual = @ErrorNumber;
    EXEC tSQLt.AssertLike @ExpectedPattern = N'%channel%', @Actual = @ErrorMessage;
    EXEC Add_Notification_ResetPassword_utxTests.AssertNothingWritten;
END;
GO
CREATE PROCEDURE Add_Notification_ResetPassword_utxTests.[test Add_Notification_ResetPassword_utx raises 735707 and writes nothing when EmailTo is not an address]
AS
BEGIN
    DECLARE @ErrorNumber INT;
    DECLARE @ErrorMessage NVARCHAR(4000);
    EXEC Add_Notification_ResetPassword_utxTests.FakeNotificationTables;

    BEGIN TRY
        EXEC dbo.Add_Notification_ResetPassword_utx
            @UserID = 42,
            @Username = N'alice',
            @OTP = 'A1B2C3',
            @EmailTo = N'alice.example.com';
    END TRY
    BEGIN CATCH
        SELECT
            @ErrorNumber = ERROR_NUMBER(),
            @ErrorMessage = ERROR_MESSAGE();
    END CATCH;

    EXEC tSQLt.AssertEquals @Expected = 735707, @Actual = @ErrorNumber;
    EXEC tSQLt.AssertLike @ExpectedPattern = N'%@EmailTo is not%', @Actual = @ErrorMessage;
    EXEC Add_Notification_ResetPassword_utxTests.AssertNothingWritten;
END;
GO
CREATE PROCEDURE Add_Notification_ResetPassword_utxTests.[test Add_Notification_ResetPassword_utx raises 735707 and writes nothing when PhoneNumber is not E164]
AS
BEGIN
    DECLARE @ErrorNumber INT;
    DECLARE @ErrorMessage NVARCHAR(4000);
    EXEC Add_Notification_ResetPassword_utxTests.FakeNotificationTables;

    BEGIN TRY
        EXEC dbo.Add_Notification_ResetPassword_utx
            @UserID = 42,
            @Username = N'alice',
            @OTP = 'A1B2C3',
            @PhoneNumber = '04155550123';
    END TRY
    BEGIN CATCH
        SELECT
            @ErrorNumber = ERROR_NUMBER(),
            @ErrorMessage = ERROR_MESSAGE();
    END CATCH;

    EXEC tSQLt.AssertEquals @Expected = 735707, @Actual = @ErrorNumber;
    EXEC tSQLt.AssertLike @ExpectedPattern = N'%@PhoneNumber%', @Actual = @ErrorMessage;
    EXEC Add_Notification_ResetPassword_utxTests.AssertNothingWritten;
END;
GO
CREATE PROCEDURE Add_Notification_ResetPassword_utxTests.[test Add_Notification_ResetPassword_utx raises 735707 and writes nothing when PreferredLanguage is no language tag]
AS
BEGIN
    DECLARE @ErrorNumber INT;
    DECLARE @ErrorMessage NVARCHAR(4000);
    EXEC Add_Notification_ResetPassword_utxTests.FakeNotificationTables;

    BEGIN TRY
        EXEC dbo.Add_Notification_ResetPassword_utx
            @UserID = 42,
            @Username = N'alice',
            @OTP = 'A1B2C3',
            @EmailTo = N'alice@example.com',
            @PreferredLanguage = N'en_GB';
    END TRY
    BEGIN CATCH
        SELECT
            @ErrorNumber = ERROR_NUMBER(),
            @ErrorMessage = ERROR_MESSAGE();
    END CATCH;

    EXEC tSQLt.AssertEquals @Expected = 735707, @Actual = @ErrorNumber;
    EXEC tSQLt.AssertLike @ExpectedPattern = N'%@PreferredLanguage%', @Actual = @ErrorMessage;
    EXEC Add_Notification_ResetPassword_utxTests.AssertNothingWritten;
END;
GO
CREATE PROCEDURE Add_Notification_ResetPassword_utxTests.[test Add_Notification_ResetPassword_utx hands out different increasing keys when called twice in a row]
AS
BEGIN
    DECLARE @First DATETIME2(7);
    DECLARE @Second DATETIME2(7);
    DECLARE @Rows INT;
    EXEC Add_Notification_ResetPassword_utxTests.FakeNotificationTables;

    EXEC dbo.Add_Notification_ResetPassword_utx
        @UserID = 42,
        @Username = N'alice',
        @OTP = 'A1B2C3',
        @EmailTo = N'alice@example.com',
        @EnqueuedAt = @First OUTPUT;
    EXEC dbo.Add_Notification_ResetPassword_utx
        @UserID = 42,
        @Username = N'alice',
        @OTP = 'D4E5F6',
        @EmailTo = N'alice@example.com',
        @EnqueuedAt = @Second OUTPUT;

    IF @First IS NULL OR @Second IS NULL OR @Second <= @First
        EXEC tSQLt.Fail @Message0 = N'the second key must be later than the first';
    SELECT @Rows = COUNT(DISTINCT n.EnqueuedAt) FROM dbo.Notification AS n;
    EXEC tSQLt.AssertEquals @Expected = 2, @Actual = @Rows;
END;
GO
CREATE PROCEDURE Add_Notification_ResetPassword_utxTests.[test Add_Notification_ResetPassword_utx hands out later keys when the last key is ahead of the clock]
AS
BEGIN
    -- A last key ahead of the clock is what two enqueues in one clock tick
    -- look like to the second one: now is not later than the last key.
    DECLARE @Last DATETIME2(7) = DATEADD(HOUR, 1, SYSUTCDATETIME());
    DECLARE @First DATETIME2(7);
    DECLARE @Second DATETIME2(7);
    EXEC Add_Notification_ResetPassword_utxTests.FakeNotificationTables;
    INSERT INTO dbo.Notification (EnqueuedAt, [Type], [Status], [Step], AttemptNum, StartedAt, ScheduledFor, UpdatedAt)
    VALUES (@Last, 'ResetPassword', 'Pending', NULL, 0, NULL, @Last, @Last);

    EXEC dbo.Add_Notification_ResetPassword_utx
        @UserID = 42,
        @Username = N'alice',
        @OTP = 'A1B2C3',
        @EmailTo = N'alice@example.com',
        @EnqueuedAt = @First OUTPUT;
    EXEC dbo.Add_Notification_ResetPassword_utx
        @UserID = 42,
        @Username = N'alice',
        @OTP = 'D4E5F6',
        @EmailTo = N'alice@example.com',
        @EnqueuedAt = @Second OUTPUT;

    IF @First IS NULL OR @First <= @Last
        EXEC tSQLt.Fail @Message0 = N'the first key must be later than the last key handed out';
    IF @Second IS NULL OR @Second <= @First
        EXEC tSQLt.Fail @Message0 = N'the second key must be later than the first';
END;
GO
CREATE PROCEDURE Add_Notification_ResetPassword_utxTests.[test Add_Notification_ResetPassword_utx keeps the schedule when ScheduledFor is given]
AS
BEGIN
    DECLARE @ScheduledFor DATETIME2(7) = DATEADD(DAY, 1, SYSUTCDATETIME());
    DECLARE @EnqueuedAt DATETIME2(7);
    DECLARE @ActualScheduledFor DATETIME2(7);
    DECLARE @ActualUpdatedAt DATETIME2(7);
    EXEC Add_Notification_ResetPassword_utxTests.FakeNotificationTables;

    EXEC dbo.Add_Notification_ResetPassword_utx
        @UserID = 42,
        @Username = N'alice',
        @OTP = 'A1B2C3',
        @EmailTo = N'alice@example.com',
        @ScheduledFor = @ScheduledFor,
        @EnqueuedAt = @EnqueuedAt OUTPUT;

    SELECT
        @ActualScheduledFor = n.ScheduledFor,
        @ActualUpdatedAt = n.UpdatedAt
    FROM dbo.Notification AS n
    WHERE n.EnqueuedAt = @EnqueuedAt;
    EXEC tSQLt.AssertEquals @Expected = @ScheduledFor, @Actual = @ActualScheduledFor, @Message = N'ScheduledFor';
    EXEC tSQLt.AssertEquals @Expected = @EnqueuedAt, @Actual = @ActualUpdatedAt, @Message = N'UpdatedAt';
END;
GO
--[@tSQLt:NoTransaction]('Add_Notification_ResetPassword_utxTests.RollbackLeftOpen')
CREATE PROCEDURE Add_Notification_ResetPassword_utxTests.[test Add_Notification_ResetPassword_utx raises 735702 when no transaction is open]
AS
BEGIN
    EXEC Add_Notification_ResetPassword_utxTests.FakeNotificationTables;
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 735702;

    EXEC dbo.Add_Notification_ResetPassword_utx
        @UserID = 42,
        @Username = N'alice',
        @OTP = 'A1B2C3',
        @EmailTo = N'alice@example.com';
END;
GO
CREATE PROCEDURE Add_Notification_ResetPassword_utxTests.[test Add_Notification_ResetPassword_utx stores the priority and group and dedup key when they are given]
AS
BEGIN
    DECLARE @RetCode INT;
    DECLARE @EnqueuedAt DATETIME2(7);
    DECLARE @Priority INT;
    DECLARE @GroupKey NVARCHAR(100);
    DECLARE @DedupKey NVARCHAR(200);
    EXEC Add_Notification_ResetPassword_utxTests.FakeNotificationTables;

    EXEC @RetCode = dbo.Add_Notification_ResetPassword_utx
        @UserID = 42,
        @Username = N'alice',
        @OTP = 'A1B2C3',
        @EmailTo = N'alice@example.com',
        @EnqueuedAt = @EnqueuedAt OUTPUT,
        @Priority = -5,
        @GroupKey = N'user:42',
        @DedupKey = N'reset:42:A1B2C3';

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    SELECT
        @Priority = n.[Priority],
        @GroupKey = n.GroupKey,
        @DedupKey = n.DedupKey
    FROM dbo.Notification AS n
    WHERE n.EnqueuedAt = @EnqueuedAt;
    EXEC tSQLt.AssertEquals @Expected = -5, @Actual = @Priority, @Message = N'Priority';
    EXEC tSQLt.AssertEqualsString @Expected = N'user:42', @Actual = @GroupKey, @Message = N'GroupKey';
    EXEC tSQLt.AssertEqualsString @Expected = N'reset:42:A1B2C3', @Actual = @DedupKey, @Message = N'DedupKey';
END;
GO
CREATE PROCEDURE Add_Notification_ResetPassword_utxTests.[test Add_Notification_ResetPassword_utx stores priority 0 and no group or dedup key when none is given]
AS
BEGIN
    DECLARE @EnqueuedAt DATETIME2(7);
    DECLARE @Priority INT;
    DECLARE @GroupKey NVARCHAR(100);
    DECLARE @DedupKey NVARCHAR(200);
    EXEC Add_Notification_ResetPassword_utxTests.FakeNotificationTables;

    EXEC dbo.Add_Notification_ResetPassword_utx
        @UserID = 42,
        @Username = N'alice',
        @OTP = 'A1B2C3',
        @EmailTo = N'alice@example.com',
        @EnqueuedAt = @EnqueuedAt OUTPUT;

    SELECT
        @Priority = n.[Priority],
        @GroupKey = n.GroupKey,
        @DedupKey = n.DedupKey
    FROM dbo.Notification AS n
    WHERE n.EnqueuedAt = @EnqueuedAt;
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @Priority, @Message = N'Priority';
    EXEC tSQLt.AssertEquals @Expected = NULL, @Actual = @GroupKey, @Message = N'GroupKey';
    EXEC tSQLt.AssertEquals @Expected = NULL, @Actual = @DedupKey, @Message = N'DedupKey';
END;
GO
CREATE PROCEDURE Add_Notification_ResetPassword_utxTests.[test Add_Notification_ResetPassword_utx stores priority 0 when Priority is NULL]
AS
BEGIN
    DECLARE @RetCode INT;
    DECLARE @EnqueuedAt DATETIME2(7);
    DECLARE @Priority INT;
    EXEC Add_Notification_ResetPassword_utxTests.FakeNotificationTables;

    EXEC @RetCode = dbo.Add_Notification_ResetPassword_utx
        @UserID = 42,
        @Username = N'alice',
        @OTP = 'A1B2C3',
        @EmailTo = N'alice@example.com',
        @EnqueuedAt = @EnqueuedAt OUTPUT,
        @Priority = NULL;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    SELECT @Priority = n.[Priority]
    FROM dbo.Notification AS n
    WHERE n.EnqueuedAt = @EnqueuedAt;
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @Priority, @Message = N'Priority';
END;
GO
CREATE PROCEDURE Add_Notification_ResetPassword_utxTests.[test Add_Notification_ResetPassword_utx returns the first key and writes nothing when the DedupKey is on a pending item]
AS
BEGIN
    DECLARE @First DATETIME2(7);
    DECLARE @Second DATETIME2(7);
    DECLARE @RetCode INT;
    DECLARE @RowsBefore INT;
    DECLARE @RowsAfter INT;
    EXEC Add_Notification_ResetPassword_utxTests.FakeNotificationTables;
    EXEC dbo.Add_Notification_ResetPassword_utx
        @UserID = 42,
        @Username = N'alice',
        @OTP = 'A1B2C3',
        @EmailTo = N'alice@example.com',
        @PhoneNumber = '+14155550123',
        @EnqueuedAt = @First OUTPUT,
        @DedupKey = N'reset:42';
    SET
        @RowsBefore = (SELECT COUNT(*) FROM dbo.Notification)
        + (SELECT COUNT(*) FROM dbo.Notification_ResetPassword)
        + (SELECT COUNT(*) FROM dbo.Notification_Email)
        + (SELECT COUNT(*) FROM dbo.Notification_Sms);

    EXEC @RetCode = dbo.Add_Notification_ResetPassword_utx
        @UserID = 42,
        @Username = N'alice',
        @OTP = 'D4E5F6',
        @EmailTo = N'alice@example.com',
        @PhoneNumber = '+14155550123',
        @EnqueuedAt = @Second OUTPUT,
        @DedupKey = N'reset:42';

    SET
        @RowsAfter = (SELECT COUNT(*) FROM dbo.Notification)
        + (SELECT COUNT(*) FROM dbo.Notification_ResetPassword)
        + (SELECT COUNT(*) FROM dbo.Notification_Email)
        + (SELECT COUNT(*) FROM dbo.Notification_Sms);
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'a duplicate is no error';
    IF @First IS NULL
        EXEC tSQLt.Fail @Message0 = N'the first enqueue must hand back its key';
    EXEC tSQLt.AssertEquals @Expected = @First, @Actual = @Second, @Message = N'the duplicate gets the first key';
    EXEC tSQLt.AssertEquals @Expected = 4, @Actual = @RowsBefore, @Message = N'rows after the first enqueue';
    EXEC tSQLt.AssertEquals @Expected = @RowsBefore, @Actual = @RowsAfter, @Message = N'rows added by the duplicate';
END;
GO
CREATE PROCEDURE Add_Notification_ResetPassword_utxTests.[test Add_Notification_ResetPassword_utx returns the first key and writes nothing when the DedupKey is on a paused item]
AS
BEGIN
    -- Paused is unfinished too: the item will run once resumed.
    DECLARE @First DATETIME2(7) = '2024-03-01T08:00:00';
    DECLARE @Second DATETIME2(7);
    DECLARE @RetCode INT;
    DECLARE @Rows INT;
    EXEC Add_Notification_ResetPassword_utxTests.FakeNotificationTables;
    INSERT INTO dbo.Notification (
        EnqueuedAt, [Type], [Status], [Step], AttemptNum, StartedAt, ScheduledFor, UpdatedAt, DedupKey
    )
    VALUES (@First, 'ResetPassword', 'Paused', NULL, 0, NULL, @First, @First, N'reset:42');

    EXEC @RetCode = dbo.Add_Notification_ResetPassword_utx
        @UserID = 42,
        @Username = N'alice',
        @OTP = 'D4E5F6',
        @EmailTo = N'alice@example.com',
        @EnqueuedAt = @Second OUTPUT,
        @DedupKey = N'reset:42';

    SET
        @Rows = (SELECT COUNT(*) FROM dbo.Notification)
        + (SELECT COUNT(*) FROM dbo.Notification_ResetPassword)
        + (SELECT COUNT(*) FROM dbo.Notification_Email)
        + (SELECT COUNT(*) FROM dbo.Notification_Sms);
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'a duplicate is no error';
    EXEC tSQLt.AssertEquals @Expected = @First, @Actual = @Second, @Message = N'the duplicate gets the first key';
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @Rows, @Message = N'rows in the four tables';
END;
GO
CREATE PROCEDURE Add_Notification_ResetPassword_utxTests.[test Add_Notification_ResetPassword_utx enqueues a new item when the DedupKey is only on a Completed item]
AS
BEGIN
    DECLARE @First DATETIME2(7);
    DECLARE @Second DATETIME2(7);
    DECLARE @Rows INT;
    DECLARE @SecondDedupKey NVARCHAR(200);
    DECLARE @SecondStatus VARCHAR(20);
    EXEC Add_Notification_ResetPassword_utxTests.FakeNotificationTables;
    EXEC dbo.Add_Notification_ResetPassword_utx
        @UserID = 42,
        @Username = N'alice',
        @OTP = 'A1B2C3',
        @EmailTo = N'alice@example.com',
        @EnqueuedAt = @First OUTPUT,
        @DedupKey = N'reset:42';
    UPDATE dbo.Notification
    SET [Status] = 'Completed'
    WHERE EnqueuedAt = @First;

    EXEC dbo.Add_Notification_ResetPassword_utx
        @UserID = 42,
        @Username = N'alice',
        @OTP = 'D4E5F6',
        @EmailTo = N'alice@example.com',
        @EnqueuedAt = @Second OUTPUT,
        @DedupKey = N'reset:42';

    IF @First IS NULL OR @Second IS NULL OR @Second <= @First
        EXEC tSQLt.Fail @Message0 = N'the second enqueue must hand out a new, later key';
    SELECT @Rows = COUNT(*) FROM dbo.Notification;
    EXEC tSQLt.AssertEquals @Expected = 2, @Actual = @Rows, @Message = N'rows in dbo.Notification';
    SELECT
        @SecondStatus = n.[Status],
        @SecondDedupKey = n.DedupKey
    FROM dbo.Notification AS n
    WHERE n.EnqueuedAt = @Second;
    EXEC tSQLt.AssertEqualsString @Expected = 'Pending', @Actual = @SecondStatus, @Message = N'Status';
    EXEC tSQLt.AssertEqualsString @Expected = N'reset:42', @Actual = @SecondDedupKey, @Message = N'DedupKey';
    SELECT @Rows = COUNT(*) FROM dbo.Notification_ResetPassword AS rp
    WHERE rp.EnqueuedAt = @Second;
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @Rows, @Message = N'the new item''s ResetPassword row';
END;
GO
CREATE PROCEDURE Add_Notification_ResetPassword_utxTests.[test Add_Notification_ResetPassword_utx raises 735707 and writes nothing when Priority is out of range]
AS
BEGIN
    DECLARE @ErrorNumber INT;
    DECLARE @ErrorMessage NVARCHAR(4000);
    EXEC Add_Notification_ResetPassword_utxTests.FakeNotificationTables;

    BEGIN TRY
        EXEC dbo.Add_Notification_ResetPassword_utx
            @UserID = 42,
            @Username = N'alice',
            @OTP = 'A1B2C3',
            @EmailTo = N'alice@example.com',
            @Priority = 32768;
    END TRY
    BEGIN CATCH
        SELECT
            @ErrorNumber = ERROR_NUMBER(),
            @ErrorMessage = ERROR_MESSAGE();
    END CATCH;

    EXEC tSQLt.AssertEquals @Expected = 735707, @Actual = @ErrorNumber;
    EXEC tSQLt.AssertLike @ExpectedPattern = N'%@Priority%', @Actual = @ErrorMessage;
    EXEC Add_Notification_ResetPassword_utxTests.AssertNothingWritten;
END;
GO
CREATE PROCEDURE Add_Notification_ResetPassword_utxTests.[test Add_Notification_ResetPassword_utx raises 735707 and writes nothing when GroupKey is blank]
AS
BEGIN
    DECLARE @ErrorNumber INT;
    DECLARE @ErrorMessage NVARCHAR(4000);
    EXEC Add_Notification_ResetPassword_utxTests.FakeNotificationTables;

    BEGIN TRY
        EXEC dbo.Add_Notification_ResetPassword_utx
            @UserID = 42,
            @Username = N'alice',
            @OTP = 'A1B2C3',
            @EmailTo = N'alice@example.com',
            @GroupKey = N'   ';
    END TRY
    BEGIN CATCH
        SELECT
            @ErrorNumber = ERROR_NUMBER(),
            @ErrorMessage = ERROR_MESSAGE();
    END CATCH;

    EXEC tSQLt.AssertEquals @Expected = 735707, @Actual = @ErrorNumber;
    EXEC tSQLt.AssertLike @ExpectedPattern = N'%@GroupKey%', @Actual = @ErrorMessage;
    EXEC Add_Notification_ResetPassword_utxTests.AssertNothingWritten;
END;
GO
CREATE PROCEDURE Add_Notification_ResetPassword_utxTests.[test Add_Notification_ResetPassword_utx raises 735707 and writes nothing when GroupKey is over 100 characters]
AS
BEGIN
    -- The parameter is wider than its column: a longer value must be refused,
    -- not cut to fit.
    DECLARE @GroupKey NVARCHAR(400) = REPLICATE(N'g', 101);
    DECLARE @ErrorNumber INT;
    DECLARE @ErrorMessage NVARCHAR(4000);
    EXEC Add_Notification_ResetPassword_utxTests.FakeNotificationTables;

    BEGIN TRY
        EXEC dbo.Add_Notification_ResetPassword_utx
            @UserID = 42,
            @Username = N'alice',
            @OTP = 'A1B2C3',
            @EmailTo = N'alice@example.com',
            @GroupKey = @GroupKey;
    END TRY
    BEGIN CATCH
        SELECT
            @ErrorNumber = ERROR_NUMBER(),
            @ErrorMessage = ERROR_MESSAGE();
    END CATCH;

    EXEC tSQLt.AssertEquals @Expected = 735707, @Actual = @ErrorNumber;
    EXEC tSQLt.AssertLike @ExpectedPattern = N'%@GroupKey%', @Actual = @ErrorMessage;
    EXEC Add_Notification_ResetPassword_utxTests.AssertNothingWritten;
END;
GO
CREATE PROCEDURE Add_Notification_ResetPassword_utxTests.[test Add_Notification_ResetPassword_utx raises 735707 and writes nothing when DedupKey is blank]
AS
BEGIN
    DECLARE @ErrorNumber INT;
    DECLARE @ErrorMessage NVARCHAR(4000);
    EXEC Add_Notification_ResetPassword_utxTests.FakeNotificationTables;

    BEGIN TRY
        EXEC dbo.Add_Notification_ResetPassword_utx
            @UserID = 42,
            @Username = N'alice',
            @OTP = 'A1B2C3',
            @EmailTo = N'alice@example.com',
            @DedupKey = N'';
    END TRY
    BEGIN CATCH
        SELECT
            @ErrorNumber = ERROR_NUMBER(),
            @ErrorMessage = ERROR_MESSAGE();
    END CATCH;

    EXEC tSQLt.AssertEquals @Expected = 735707, @Actual = @ErrorNumber;
    EXEC tSQLt.AssertLike @ExpectedPattern = N'%@DedupKey%', @Actual = @ErrorMessage;
    EXEC Add_Notification_ResetPassword_utxTests.AssertNothingWritten;
END;
GO
CREATE PROCEDURE Add_Notification_ResetPassword_utxTests.[test Add_Notification_ResetPassword_utx raises 735707 and writes nothing when DedupKey is over 200 characters]
AS
BEGIN
    -- The parameter is wider than its column: a longer value must be refused,
    -- not cut to fit (a cut key could match another request's).
    DECLARE @DedupKey NVARCHAR(400) = REPLICATE(N'd', 201);
    DECLARE @ErrorNumber INT;
    DECLARE @ErrorMessage NVARCHAR(4000);
    EXEC Add_Notification_ResetPassword_utxTests.FakeNotificationTables;

    BEGIN TRY
        EXEC dbo.Add_Notification_ResetPassword_utx
            @UserID = 42,
            @Username = N'alice',
            @OTP = 'A1B2C3',
            @EmailTo = N'alice@example.com',
            @DedupKey = @DedupKey;
    END TRY
    BEGIN CATCH
        SELECT
            @ErrorNumber = ERROR_NUMBER(),
            @ErrorMessage = ERROR_MESSAGE();
    END CATCH;

    EXEC tSQLt.AssertEquals @Expected = 735707, @Actual = @ErrorNumber;
    EXEC tSQLt.AssertLike @ExpectedPattern = N'%@DedupKey%', @Actual = @ErrorMessage;
    EXEC Add_Notification_ResetPassword_utxTests.AssertNothingWritten;
END;
GO
-- The key takes no lock: nothing is the session's, so nothing outlives a cancelled call; a
-- DedupKey's and a group's locks are the transaction's, to its end (dbo.Lock_ItemKeys_utx's
-- names; APPLOCK_MODE: https://learn.microsoft.com/sql/t-sql/functions/applock-mode-transact-sql).
CREATE PROCEDURE Add_Notification_ResetPassword_utxTests.[test Add_Notification_ResetPassword_utx keeps the DedupKey and group locks and holds none of the session when it returns]
AS
BEGIN
    DECLARE @Mode NVARCHAR(32); -- an EXEC takes no function call as an argument
    DECLARE @RetCode INT;
    DECLARE @DedupKey NVARCHAR(200) = N'reset-42';
    DECLARE @GroupKey NVARCHAR(200) = N'user-42';
    EXEC Add_Notification_ResetPassword_utxTests.FakeNotificationTables;

    EXEC @RetCode = dbo.Add_Notification_ResetPassword_utx
        @UserID = 42,
        @Username = N'alice',
        @OTP = 'A1B2C3',
        @EmailTo = N'alice@example.com',
        @GroupKey = @GroupKey,
        @DedupKey = @DedupKey;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode;
    SET @Mode = APPLOCK_MODE(N'public', N'dbo.Notification.DedupKey#' + CAST(CHECKSUM(@DedupKey) AS NVARCHAR(11)), N'Transaction');
    EXEC tSQLt.AssertEqualsString
        @Expected = N'Exclusive',
        @Actual = @Mode,
        @Message = N'the DedupKey''s lock';
    SET @Mode = APPLOCK_MODE(N'public', N'dbo.Notification.GroupKey#' + CAST(CHECKSUM(@GroupKey) AS NVARCHAR(11)), N'Transaction');
    EXEC tSQLt.AssertEqualsString
        @Expected = N'Exclusive',
        @Actual = @Mode,
        @Message = N'the group''s lock';
    SET @Mode = APPLOCK_MODE(N'public', N'dbo.Notification', N'Session');
    EXEC tSQLt.AssertEqualsString
        @Expected = N'NoLock',
        @Actual = @Mode,
        @Message = N'a lock of the session';
END;
GO
