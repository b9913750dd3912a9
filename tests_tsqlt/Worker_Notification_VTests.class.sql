SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'Worker_Notification_VTests';
GO
-- tSQLt runs the procedures whose names start with "test ": the spaces are required.
-- One ResetPassword notification, with an e-mail channel; the tests add the SMS channel they need.
CREATE PROCEDURE Worker_Notification_VTests.ArrangeNotification
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.Notification';
    EXEC tSQLt.FakeTable @TableName = N'dbo.Notification_ResetPassword';
    EXEC tSQLt.FakeTable @TableName = N'dbo.Notification_Email';
    EXEC tSQLt.FakeTable @TableName = N'dbo.Notification_Sms';
    INSERT INTO dbo.Notification (
        EnqueuedAt,
        [Type],
        [Status],
        [Step],
        AttemptNum,
        Response,
        Error,
        StartedAt,
        Duration,
        ScheduledFor,
        UpdatedAt,
        [Priority],
        GroupKey,
        DedupKey,
        LockedBy,
        LeaseUntil
    )
    VALUES (
        '2024-01-01T00:00:00',
        'ResetPassword',
        'Processing',
        'Send',
        1,
        N'base response',
        N'base error',
        '2024-01-01T00:01:00',
        1500,
        '2024-01-01T00:00:30',
        '2024-01-01T00:01:01',
        3,
        N'user-42',
        N'reset-42',
        N'worker-1',
        '2024-01-01T00:06:00'
    );
    INSERT INTO dbo.Notification_ResetPassword (EnqueuedAt, OTP, UserID, Username)
    VALUES ('2024-01-01T00:00:00', '123456', 42, N'alice');
    INSERT INTO dbo.Notification_Email (EnqueuedAt, EmailTo, PreferredLanguage, Response, Error)
    VALUES ('2024-01-01T00:00:00', N'alice@example.org', N'de', N'250 OK', N'no email error');
END;
GO
-- Every column of the view, so that a column taken from the wrong table shows up.
CREATE PROCEDURE Worker_Notification_VTests.[test Worker_Notification_V shows one row when both channels exist]
AS
BEGIN
    EXEC Worker_Notification_VTests.ArrangeNotification;
    INSERT INTO dbo.Notification_Sms (EnqueuedAt, PhoneNumber, Response, Error)
    VALUES ('2024-01-01T00:00:00', '+14155550123', N'sms queued', N'timeout');

    SELECT
        v.EnqueuedAt,
        v.[Type],
        v.[Status],
        v.[Step],
        v.AttemptNum,
        v.ScheduledFor,
        v.StartedAt,
        v.Duration,
        v.UpdatedAt,
        v.LockedBy,
        v.LeaseUntil,
        v.[Priority],
        v.GroupKey,
        v.DedupKey,
        v.Response,
        v.Error,
        v.UserID,
        v.Username,
        v.OTP,
        v.EmailTo,
        v.PreferredLanguage,
        v.EmailResponse,
        v.EmailError,
        v.PhoneNumber,
        v.SmsResponse,
        v.SmsError
    INTO #Actual
    FROM dbo.Worker_Notification_V AS v;

    SELECT TOP (0)
        a.EnqueuedAt,
        a.[Type],
        a.[Status],
        a.[Step],
        a.AttemptNum,
        a.ScheduledFor,
        a.StartedAt,
        a.Duration,
        a.UpdatedAt,
        a.LockedBy,
        a.LeaseUntil,
        a.[Priority],
        a.GroupKey,
        a.DedupKey,
        a.Response,
        a.Error,
        a.UserID,
        a.Username,
        a.OTP,
        a.EmailTo,
        a.PreferredLanguage,
        a.EmailResponse,
        a.EmailError,
        a.PhoneNumber,
        a.SmsResponse,
        a.SmsError
    INTO #Expected
    FROM #Actual AS a;
    INSERT INTO #Expected (
        EnqueuedAt,
        [Type],
        [Status],
        [Step],
        AttemptNum,
        ScheduledFor,
        StartedAt,
        Duration,
        UpdatedAt,
        LockedBy,
        LeaseUntil,
        [Priority],
        GroupKey,
        DedupKey,
        Response,
        Error,
        UserID,
        Username,
        OTP,
        EmailTo,
        PreferredLanguage,
        EmailResponse,
        EmailError,
        PhoneNumber,
        SmsResponse,
        SmsError
    )
    VALUES (
        '2024-01-01T00:00:00',
        'ResetPassword',
        'Processing',
        'Send',
        1,
        '2024-01-01T00:00:30',
        '2024-01-01T00:01:00',
        1500,
        '2024-01-01T00:01:01',
        N'worker-1',
        '2024-01-01T00:06:00',
        3,
        N'user-42',
        N'reset-42',
        N'base response',
        N'base error',
        42,
        N'alice',
        '123456',
        N'alice@example.org',
        N'de',
        N'250 OK',
        N'no email error',
        '+14155550123',
        N'sms queued',
        N'timeout'
    );

    EXEC tSQLt.AssertEqualsTable @Expected = N'#Expected', @Actual = N'#Actual';
END;
GO
-- A notification without an SMS channel still shows, with NULL where the SMS columns would be.
CREATE PROCEDURE Worker_Notification_VTests.[test Worker_Notification_V shows NULL SMS columns when only email exists]
AS
BEGIN
    EXEC Worker_Notification_VTests.ArrangeNotification;

    SELECT
        v.EnqueuedAt,
        v.OTP,
        v.EmailTo,
        v.EmailResponse,
        v.PhoneNumber,
        v.SmsResponse,
        v.SmsError
    INTO #Actual
    FROM dbo.Worker_Notification_V AS v;

    SELECT TOP (0)
        a.EnqueuedAt,
        a.OTP,
        a.EmailTo,
        a.EmailResponse,
        a.PhoneNumber,
        a.SmsResponse,
        a.SmsError
    INTO #Expected
    FROM #Actual AS a;
    INSERT INTO #Expected (EnqueuedAt, OTP, EmailTo, EmailResponse, PhoneNumber, SmsResponse, SmsError)
    VALUES ('2024-01-01T00:00:00', '123456', N'alice@example.org', N'250 OK', NULL, NULL, NULL);

    EXEC tSQLt.AssertEqualsTable @Expected = N'#Expected', @Actual = N'#Actual';
END;
GO
