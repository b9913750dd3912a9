SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'Worker_Notification_VTests';
GO
-- tSQLt runs the procedures whose names start with "test ": the spaces are required.
-- The queue and every table its view joins, faked empty (without their foreign keys and
-- CHECKs, so that one item may have a row in each).
CREATE PROCEDURE Worker_Notification_VTests.FakeQueue
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.Notification';
    EXEC tSQLt.FakeTable @TableName = N'dbo.Notification_ResetPassword';
    EXEC tSQLt.FakeTable @TableName = N'dbo.Notification_Email';
    EXEC tSQLt.FakeTable @TableName = N'dbo.Notification_Sms';
END;
GO
-- One item, every column with a value of its own, so that a column mapped wrongly shows up.
CREATE PROCEDURE Worker_Notification_VTests.AddItem
AS
BEGIN
    INSERT INTO dbo.Notification (
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
        Error
    )
    VALUES (
        '2024-01-01T00:00:00',
        'ResetPassword',
        'Error',
        'Push',
        2,
        '2024-01-01T00:01:00',
        '2024-01-01T00:02:00',
        1500,
        '2024-01-01T00:02:01',
        N'worker-7',
        '2024-01-01T00:07:00',
        -3,
        N'group:1001',
        N'dedup:1001',
        N'502 Bad Gateway',
        N'upstream unavailable'
    );
END;
GO
-- The item's row in each table the view joins but @Without, each column a value of its type
-- that differs from column to column.
CREATE PROCEDURE Worker_Notification_VTests.AddJoinedRows
    @Without SYSNAME = NULL
AS
BEGIN
    IF (@Without IS NULL OR @Without <> N'Notification_ResetPassword')
        BEGIN
            INSERT INTO dbo.Notification_ResetPassword (
                EnqueuedAt,
                UserID,
                Username,
                OTP
            )
            VALUES (
                '2024-01-01T00:00:00',
                1,
                N'2',
                '3'
            );
        END;
    IF (@Without IS NULL OR @Without <> N'Notification_Email')
        BEGIN
            INSERT INTO dbo.Notification_Email (
                EnqueuedAt,
                EmailTo,
                PreferredLanguage,
                Response,
                Error
            )
            VALUES (
                '2024-01-01T00:00:00',
                N'4',
                N'5',
                N'6',
                N'7'
            );
        END;
    IF (@Without IS NULL OR @Without <> N'Notification_Sms')
        BEGIN
            INSERT INTO dbo.Notification_Sms (
                EnqueuedAt,
                PhoneNumber,
                Response,
                Error
            )
            VALUES (
                '2024-01-01T00:00:00',
                '8',
                N'9',
                N'10'
            );
        END;
END;
GO
-- Every column of the view, the joined tables' too: one row per item, whatever it joins.
CREATE PROCEDURE Worker_Notification_VTests.[test Worker_Notification_V shows every column in one row when the item has a row in each joined table]
AS
BEGIN
    EXEC Worker_Notification_VTests.FakeQueue;
    EXEC Worker_Notification_VTests.AddItem;
    EXEC Worker_Notification_VTests.AddJoinedRows;

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
        'Error',
        'Push',
        2,
        '2024-01-01T00:01:00',
        '2024-01-01T00:02:00',
        1500,
        '2024-01-01T00:02:01',
        N'worker-7',
        '2024-01-01T00:07:00',
        -3,
        N'group:1001',
        N'dedup:1001',
        N'502 Bad Gateway',
        N'upstream unavailable',
        1,
        N'2',
        '3',
        N'4',
        N'5',
        N'6',
        N'7',
        '8',
        N'9',
        N'10'
    );

    EXEC tSQLt.AssertEqualsTable @Expected = N'#Expected', @Actual = N'#Actual';
END;
GO
-- An item without a row in dbo.Notification_ResetPassword still shows: NULL in that
-- table's columns, the other joined tables' columns as they are.
CREATE PROCEDURE Worker_Notification_VTests.[test Worker_Notification_V shows NULL ResetPassword columns when an item has no row there]
AS
BEGIN
    EXEC Worker_Notification_VTests.FakeQueue;
    EXEC Worker_Notification_VTests.AddItem;
    EXEC Worker_Notification_VTests.AddJoinedRows @Without = N'Notification_ResetPassword';

    SELECT
        v.EnqueuedAt,
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
        NULL,
        NULL,
        NULL,
        N'4',
        N'5',
        N'6',
        N'7',
        '8',
        N'9',
        N'10'
    );

    EXEC tSQLt.AssertEqualsTable @Expected = N'#Expected', @Actual = N'#Actual';
END;
GO
-- An item without a row in dbo.Notification_Email still shows: NULL in that
-- table's columns, the other joined tables' columns as they are.
CREATE PROCEDURE Worker_Notification_VTests.[test Worker_Notification_V shows NULL Email columns when an item has no row there]
AS
BEGIN
    EXEC Worker_Notification_VTests.FakeQueue;
    EXEC Worker_Notification_VTests.AddItem;
    EXEC Worker_Notification_VTests.AddJoinedRows @Without = N'Notification_Email';

    SELECT
        v.EnqueuedAt,
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
        1,
        N'2',
        '3',
        NULL,
        NULL,
        NULL,
        NULL,
        '8',
        N'9',
        N'10'
    );

    EXEC tSQLt.AssertEqualsTable @Expected = N'#Expected', @Actual = N'#Actual';
END;
GO
-- An item without a row in dbo.Notification_Sms still shows: NULL in that
-- table's columns, the other joined tables' columns as they are.
CREATE PROCEDURE Worker_Notification_VTests.[test Worker_Notification_V shows NULL Sms columns when an item has no row there]
AS
BEGIN
    EXEC Worker_Notification_VTests.FakeQueue;
    EXEC Worker_Notification_VTests.AddItem;
    EXEC Worker_Notification_VTests.AddJoinedRows @Without = N'Notification_Sms';

    SELECT
        v.EnqueuedAt,
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
        1,
        N'2',
        '3',
        N'4',
        N'5',
        N'6',
        N'7',
        NULL,
        NULL,
        NULL
    );

    EXEC tSQLt.AssertEqualsTable @Expected = N'#Expected', @Actual = N'#Actual';
END;
GO
