SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'Add_Notification_ResetPassword_Batch_utxTests';
GO
-- The four tables an enqueue writes, faked with their defaults: the procedure
-- relies on them for Status (Pending), AttemptNum (0), Response and Error.
CREATE PROCEDURE Add_Notification_ResetPassword_Batch_utxTests.FakeNotificationTables
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.Notification', @Defaults = 1;
    EXEC tSQLt.FakeTable @TableName = N'dbo.Notification_ResetPassword', @Defaults = 1;
    EXEC tSQLt.FakeTable @TableName = N'dbo.Notification_Email', @Defaults = 1;
    EXEC tSQLt.FakeTable @TableName = N'dbo.Notification_Sms', @Defaults = 1;
END;
GO
-- Calls the procedure with @Items (a valid item 1 and a bad item 2, as each rule's test
-- gives it) and asserts that it refused the call with 735707 naming item 2 and the rule,
-- and that it wrote nothing, not even item 1.
CREATE PROCEDURE Add_Notification_ResetPassword_Batch_utxTests.AssertRefused
    @Items dbo.Notification_ResetPasswordItemList READONLY,
    @ExpectedPattern NVARCHAR(400)
AS
BEGIN
    DECLARE @ErrorNumber INT;
    DECLARE @ErrorMessage NVARCHAR(4000);
    DECLARE @RetCode INT;

    BEGIN TRY
        EXEC @RetCode = dbo.Add_Notification_ResetPassword_Batch_utx @Items = @Items;
    END TRY
    BEGIN CATCH
        SELECT
            @ErrorNumber = ERROR_NUMBER(),
            @ErrorMessage = ERROR_MESSAGE();
    END CATCH;

    EXEC tSQLt.AssertEquals @Expected = 735707, @Actual = @ErrorNumber;
    EXEC tSQLt.AssertLike @ExpectedPattern = @ExpectedPattern, @Actual = @ErrorMessage;
    EXEC tSQLt.AssertEmptyTable @TableName = N'dbo.Notification';
    EXEC tSQLt.AssertEmptyTable @TableName = N'dbo.Notification_ResetPassword';
    EXEC tSQLt.AssertEmptyTable @TableName = N'dbo.Notification_Email';
    EXEC tSQLt.AssertEmptyTable @TableName = N'dbo.Notification_Sms';
END;
GO
-- A notification already in the queue, in any state, carrying a DedupKey.
CREATE PROCEDURE Add_Notification_ResetPassword_Batch_utxTests.AddQueued
    @EnqueuedAt DATETIME2(7),
    @Status VARCHAR(20),
    @DedupKey NVARCHAR(200)
AS
BEGIN
    INSERT INTO dbo.Notification (
        EnqueuedAt, [Type], [Status], AttemptNum, ScheduledFor, UpdatedAt, [Priority], DedupKey
    )
    VALUES (@EnqueuedAt, 'ResetPassword', @Status, 0, @EnqueuedAt, @EnqueuedAt, 0, @DedupKey);
END;
GO
CREATE PROCEDURE Add_Notification_ResetPassword_Batch_utxTests.[test Add_Notification_ResetPassword_Batch_utx writes each notification with its channels when the items are valid]
AS
BEGIN
    DECLARE @Items dbo.Notification_ResetPasswordItemList;
    DECLARE @RetCode INT;
    DECLARE @Enqueued NVARCHAR(MAX);
    DECLARE @Rows INT;
    EXEC Add_Notification_ResetPassword_Batch_utxTests.FakeNotificationTables;
    -- 1: e-mail only (default language), 2: SMS only, 3: both, in German.
    INSERT INTO @Items (ItemNo, UserID, Username, OTP, EmailTo, PreferredLanguage, PhoneNumber, [Priority])
    VALUES
    (1, 11, N'ada', 'A1B2C3', N'ada@example.com', NULL, NULL, NULL),
    (2, 12, N'bob', '123456', NULL, NULL, '+14155550123', 5),
    (3, 13, N'cleo', 'XYZ9', N'cleo@example.de', N'de-DE', '+4915112345678', NULL);

    EXEC @RetCode = dbo.Add_Notification_ResetPassword_Batch_utx
        @Items = @Items,
        @Enqueued = @Enqueued OUTPUT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    SELECT @Rows = COUNT(*)
    FROM dbo.Notification AS n
    INNER JOIN dbo.Notification_ResetPassword AS rp ON n.EnqueuedAt = rp.EnqueuedAt
    WHERE
        n.[Type] = 'ResetPassword'
        AND n.[Status] = 'Pending'
        AND n.ScheduledFor = n.EnqueuedAt
        AND n.UpdatedAt = n.EnqueuedAt
        AND (
            (rp.UserID = 11 AND rp.Username = N'ada' AND rp.OTP = 'A1B2C3' AND n.[Priority] = 0)
            OR (rp.UserID = 12 AND rp.Username = N'bob' AND rp.OTP = '123456' AND n.[Priority] = 5)
            OR (rp.UserID = 13 AND rp.Username = N'cleo' AND rp.OTP = 'XYZ9' AND n.[Priority] = 0)
        );
    EXEC tSQLt.AssertEquals @Expected = 3, @Actual = @Rows, @Message = N'notifications as given';
    SELECT @Rows = COUNT(*)
    FROM dbo.Notification_Email AS e
    INNER JOIN dbo.Notification_ResetPassword AS rp ON e.EnqueuedAt = rp.EnqueuedAt
    WHERE
        (rp.UserID = 11 AND e.EmailTo = N'ada@example.com' AND e.PreferredLanguage = N'en')
        OR (rp.UserID = 13 AND e.EmailTo = N'cleo@example.de' AND e.PreferredLanguage = N'de-DE');
    EXEC tSQLt.AssertEquals @Expected = 2, @Actual = @Rows, @Message = N'e-mail rows';
    SELECT @Rows = COUNT(*) FROM dbo.Notification_Email;
    EXEC tSQLt.AssertEquals @Expected = 2, @Actual = @Rows, @Message = N'no e-mail row for item 2';
    SELECT @Rows = COUNT(*)
    FROM dbo.Notification_Sms AS s
    INNER JOIN dbo.Notification_ResetPassword AS rp ON s.EnqueuedAt = rp.EnqueuedAt
    WHERE
        (rp.UserID = 12 AND s.PhoneNumber = '+14155550123')
        OR (rp.UserID = 13 AND s.PhoneNumber = '+4915112345678');
    EXEC tSQLt.AssertEquals @Expected = 2, @Actual = @Rows, @Message = N'SMS rows';
    SELECT @Rows = COUNT(*) FROM dbo.Notification_Sms;
    EXEC tSQLt.AssertEquals @Expected = 2, @Actual = @Rows, @Message = N'no SMS row for item 1';
    SELECT @Rows = COUNT(*)
    FROM OPENJSON (@Enqueued) WITH (ItemNo INT, EnqueuedAt DATETIME2(7), IsDuplicate BIT) AS j
    INNER JOIN dbo.Notification AS n ON j.EnqueuedAt = n.EnqueuedAt
    WHERE j.IsDuplicate = 0;
    EXEC tSQLt.AssertEquals @Expected = 3, @Actual = @Rows, @Message = N'@Enqueued names each new key';
END;
GO
CREATE PROCEDURE Add_Notification_ResetPassword_Batch_utxTests.[test Add_Notification_ResetPassword_Batch_utx keys items 1 us apart in ItemNo order when given three]
AS
BEGIN
    DECLARE @Items dbo.Notification_ResetPasswordItemList;
    DECLARE @Rows INT;
    EXEC Add_Notification_ResetPassword_Batch_utxTests.FakeNotificationTables;
    INSERT INTO @Items (ItemNo, UserID, Username, OTP, EmailTo)
    VALUES
    (7, 3, N'c', 'CCCC', N'c@example.com'),
    (2, 1, N'a', 'AAAA', N'a@example.com'),
    (5, 2, N'b', 'BBBB', N'b@example.com');

    EXEC dbo.Add_Notification_ResetPassword_Batch_utx @Items = @Items;

    -- Each item's key is the first key plus (its rank by ItemNo) microseconds.
    SELECT @Rows = COUNT(*)
    FROM (
        SELECT
            rp.UserID,
            DATEDIFF(MICROSECOND, MIN(n.EnqueuedAt) OVER (), n.EnqueuedAt) AS Offset
        FROM dbo.Notification AS n
        INNER JOIN dbo.Notification_ResetPassword AS rp ON n.EnqueuedAt = rp.EnqueuedAt
    ) AS k
    WHERE k.Offset = k.UserID - 1;
    EXEC tSQLt.AssertEquals @Expected = 3, @Actual = @Rows;
END;
GO
CREATE PROCEDURE Add_Notification_ResetPassword_Batch_utxTests.[test Add_Notification_ResetPassword_Batch_utx writes nothing for an item when an unfinished notification has its DedupKey]
AS
BEGIN
    DECLARE @Items dbo.Notification_ResetPasswordItemList;
    DECLARE @Holder DATETIME2(7) = '2024-01-01T00:00:00';
    DECLARE @Enqueued NVARCHAR(MAX);
    DECLARE @Rows INT;
    DECLARE @Duplicate DATETIME2(7);
    EXEC Add_Notification_ResetPassword_Batch_utxTests.FakeNotificationTables;
    EXEC Add_Notification_ResetPassword_Batch_utxTests.AddQueued @EnqueuedAt = @Holder, @Status = 'Processing', @DedupKey = N'reset:11';
    INSERT INTO @Items (ItemNo, UserID, Username, OTP, EmailTo, DedupKey)
    VALUES
    (1, 11, N'ada', 'A1B2C3', N'ada@example.com', N'reset:11'),
    (2, 12, N'bob', 'B1B2C3', N'bob@example.com', N'reset:12');

    EXEC dbo.Add_Notification_ResetPassword_Batch_utx
        @Items = @Items,
        @Enqueued = @Enqueued OUTPUT;

    SELECT @Duplicate = j.EnqueuedAt
    FROM OPENJSON (@Enqueued) WITH (ItemNo INT, EnqueuedAt DATETIME2(7), IsDuplicate BIT) AS j
    WHERE j.ItemNo = 1 AND j.IsDuplicate = 1;
    EXEC tSQLt.AssertEquals @Expected = @Holder, @Actual = @Duplicate, @Message = N'item 1 gets the holder';
    SELECT @Rows = COUNT(*) FROM dbo.Notification;
    EXEC tSQLt.AssertEquals @Expected = 2, @Actual = @Rows, @Message = N'the holder and item 2';
    SELECT @Rows = COUNT(*) FROM dbo.Notification_ResetPassword AS rp
    WHERE rp.UserID = 12;
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @Rows, @Message = N'only item 2 is written';
    SELECT @Rows = COUNT(*) FROM dbo.Notification_Email;
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @Rows, @Message = N'e-mail rows';
END;
GO
CREATE PROCEDURE Add_Notification_ResetPassword_Batch_utxTests.[test Add_Notification_ResetPassword_Batch_utx enqueues a DedupKey again when its holder is finished]
AS
BEGIN
    DECLARE @Items dbo.Notification_ResetPasswordItemList;
    DECLARE @Rows INT;
    EXEC Add_Notification_ResetPassword_Batch_utxTests.FakeNotificationTables;
    EXEC Add_Notification_ResetPassword_Batch_utxTests.AddQueued @EnqueuedAt = '2024-01-01T00:00:00', @Status = 'Completed', @DedupKey = N'reset:11';
    INSERT INTO @Items (ItemNo, UserID, Username, OTP, EmailTo, DedupKey)
    VALUES (1, 11, N'ada', 'A1B2C3', N'ada@example.com', N'reset:11');

    EXEC dbo.Add_Notification_ResetPassword_Batch_utx @Items = @Items;

    SELECT @Rows = COUNT(*) FROM dbo.Notification AS n
    WHERE n.DedupKey = N'reset:11' AND n.[Status] = 'Pending';
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @Rows;
END;
GO
CREATE PROCEDURE Add_Notification_ResetPassword_Batch_utxTests.[test Add_Notification_ResetPassword_Batch_utx inserts the lowest ItemNo once when items of one call share a DedupKey]
AS
BEGIN
    DECLARE @Items dbo.Notification_ResetPasswordItemList;
    DECLARE @Enqueued NVARCHAR(MAX);
    DECLARE @Rows INT;
    DECLARE @Keys INT;
    EXEC Add_Notification_ResetPassword_Batch_utxTests.FakeNotificationTables;
    INSERT INTO @Items (ItemNo, UserID, Username, OTP, PhoneNumber, DedupKey)
    VALUES
    (4, 4, N'd', 'DDDD', '+14155550104', N'same'),
    (2, 2, N'b', 'BBBB', '+14155550102', N'same'),
    (9, 9, N'i', 'IIII', '+14155550109', N'same');

    EXEC dbo.Add_Notification_ResetPassword_Batch_utx
        @Items = @Items,
        @Enqueued = @Enqueued OUTPUT;

    SELECT @Rows = COUNT(*) FROM dbo.Notification_ResetPassword AS rp
    WHERE rp.UserID = 2;
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @Rows, @Message = N'item 2 is the one written';
    SELECT @Rows = COUNT(*) FROM dbo.Notification;
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @Rows, @Message = N'one notification';
    SELECT
        @Rows = SUM(CAST(j.IsDuplicate AS INT)),
        @Keys = COUNT(DISTINCT j.EnqueuedAt)
    FROM OPENJSON (@Enqueued) WITH (ItemNo INT, EnqueuedAt DATETIME2(7), IsDuplicate BIT) AS j;
    EXEC tSQLt.AssertEquals @Expected = 2, @Actual = @Rows, @Message = N'items 4 and 9 are duplicates';
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @Keys, @Message = N'all three share one key';
END;
GO
CREATE PROCEDURE Add_Notification_ResetPassword_Batch_utxTests.[test Add_Notification_ResetPassword_Batch_utx raises 735707 naming the item when its UserID is NULL]
AS
BEGIN
    DECLARE @Items dbo.Notification_ResetPasswordItemList;
    EXEC Add_Notification_ResetPassword_Batch_utxTests.FakeNotificationTables;
    INSERT INTO @Items (
        ItemNo, UserID, Username, OTP, EmailTo, PreferredLanguage, PhoneNumber, [Priority], GroupKey, DedupKey
    )
    VALUES
    (1, 11, N'ada', 'A1B2C3', N'ada@example.com', NULL, NULL, NULL, NULL, NULL),
    (2, NULL, N'bob', 'B1B2C3', N'bob@example.com', NULL, NULL, NULL, NULL, NULL);

    EXEC Add_Notification_ResetPassword_Batch_utxTests.AssertRefused @Items = @Items, @ExpectedPattern = N'%item 2: %UserID%';
END;
GO
CREATE PROCEDURE Add_Notification_ResetPassword_Batch_utxTests.[test Add_Notification_ResetPassword_Batch_utx raises 735707 naming the item when its UserID is zero]
AS
BEGIN
    DECLARE @Items dbo.Notification_ResetPasswordItemList;
    EXEC Add_Notification_ResetPassword_Batch_utxTests.FakeNotificationTables;
    INSERT INTO @Items (
        ItemNo, UserID, Username, OTP, EmailTo, PreferredLanguage, PhoneNumber, [Priority], GroupKey, DedupKey
    )
    VALUES
    (1, 11, N'ada', 'A1B2C3', N'ada@example.com', NULL, NULL, NULL, NULL, NULL),
    (2, 0, N'bob', 'B1B2C3', N'bob@example.com', NULL, NULL, NULL, NULL, NULL);

    EXEC Add_Notification_ResetPassword_Batch_utxTests.AssertRefused @Items = @Items, @ExpectedPattern = N'%item 2: %UserID%';
END;
GO
CREATE PROCEDURE Add_Notification_ResetPassword_Batch_utxTests.[test Add_Notification_ResetPassword_Batch_utx raises 735707 naming the item when its Username is blank]
AS
BEGIN
    DECLARE @Items dbo.Notification_ResetPasswordItemList;
    EXEC Add_Notification_ResetPassword_Batch_utxTests.FakeNotificationTables;
    INSERT INTO @Items (
        ItemNo, UserID, Username, OTP, EmailTo, PreferredLanguage, PhoneNumber, [Priority], GroupKey, DedupKey
    )
    VALUES
    (1, 11, N'ada', 'A1B2C3', N'ada@example.com', NULL, NULL, NULL, NULL, NULL),
    (2, 12, N'  ', 'B1B2C3', N'bob@example.com', NULL, NULL, NULL, NULL, NULL);

    EXEC Add_Notification_ResetPassword_Batch_utxTests.AssertRefused @Items = @Items, @ExpectedPattern = N'%item 2: %Username%';
END;
GO
CREATE PROCEDURE Add_Notification_ResetPassword_Batch_utxTests.[test Add_Notification_ResetPassword_Batch_utx raises 735707 naming the item when its Username is over 128 characters]
AS
BEGIN
    DECLARE @Items dbo.Notification_ResetPasswordItemList;
    EXEC Add_Notification_ResetPassword_Batch_utxTests.FakeNotificationTables;
    INSERT INTO @Items (
        ItemNo, UserID, Username, OTP, EmailTo, PreferredLanguage, PhoneNumber, [Priority], GroupKey, DedupKey
    )
    VALUES
    (1, 11, N'ada', 'A1B2C3', N'ada@example.com', NULL, NULL, NULL, NULL, NULL),
    (2, 12, REPLICATE(N'b', 129), 'B1B2C3', N'bob@example.com', NULL, NULL, NULL, NULL, NULL);

    EXEC Add_Notification_ResetPassword_Batch_utxTests.AssertRefused @Items = @Items, @ExpectedPattern = N'%item 2: %Username%';
END;
GO
CREATE PROCEDURE Add_Notification_ResetPassword_Batch_utxTests.[test Add_Notification_ResetPassword_Batch_utx raises 735707 naming the item when its OTP is too short]
AS
BEGIN
    DECLARE @Items dbo.Notification_ResetPasswordItemList;
    EXEC Add_Notification_ResetPassword_Batch_utxTests.FakeNotificationTables;
    INSERT INTO @Items (
        ItemNo, UserID, Username, OTP, EmailTo, PreferredLanguage, PhoneNumber, [Priority], GroupKey, DedupKey
    )
    VALUES
    (1, 11, N'ada', 'A1B2C3', N'ada@example.com', NULL, NULL, NULL, NULL, NULL),
    (2, 12, N'bob', 'B1B', N'bob@example.com', NULL, NULL, NULL, NULL, NULL);

    EXEC Add_Notification_ResetPassword_Batch_utxTests.AssertRefused @Items = @Items, @ExpectedPattern = N'%item 2: %OTP%';
END;
GO
CREATE PROCEDURE Add_Notification_ResetPassword_Batch_utxTests.[test Add_Notification_ResetPassword_Batch_utx raises 735707 naming the item when its OTP is too long]
AS
BEGIN
    DECLARE @Items dbo.Notification_ResetPasswordItemList;
    EXEC Add_Notification_ResetPassword_Batch_utxTests.FakeNotificationTables;
    INSERT INTO @Items (
        ItemNo, UserID, Username, OTP, EmailTo, PreferredLanguage, PhoneNumber, [Priority], GroupKey, DedupKey
    )
    VALUES
    (1, 11, N'ada', 'A1B2C3', N'ada@example.com', NULL, NULL, NULL, NULL, NULL),
    (2, 12, N'bob', 'B1B2C3D4E5F', N'bob@example.com', NULL, NULL, NULL, NULL, NULL);

    EXEC Add_Notification_ResetPassword_Batch_utxTests.AssertRefused @Items = @Items, @ExpectedPattern = N'%item 2: %OTP%';
END;
GO
CREATE PROCEDURE Add_Notification_ResetPassword_Batch_utxTests.[test Add_Notification_ResetPassword_Batch_utx raises 735707 naming the item when its OTP has punctuation]
AS
BEGIN
    DECLARE @Items dbo.Notification_ResetPasswordItemList;
    EXEC Add_Notification_ResetPassword_Batch_utxTests.FakeNotificationTables;
    INSERT INTO @Items (
        ItemNo, UserID, Username, OTP, EmailTo, PreferredLanguage, PhoneNumber, [Priority], GroupKey, DedupKey
    )
    VALUES
    (1, 11, N'ada', 'A1B2C3', N'ada@example.com', NULL, NULL, NULL, NULL, NULL),
    (2, 12, N'bob', 'B1-2C3', N'bob@example.com', NULL, NULL, NULL, NULL, NULL);

    EXEC Add_Notification_ResetPassword_Batch_utxTests.AssertRefused @Items = @Items, @ExpectedPattern = N'%item 2: %OTP%';
END;
GO
CREATE PROCEDURE Add_Notification_ResetPassword_Batch_utxTests.[test Add_Notification_ResetPassword_Batch_utx raises 735707 naming the item when its OTP ends in a space]
AS
BEGIN
    DECLARE @Items dbo.Notification_ResetPasswordItemList;
    EXEC Add_Notification_ResetPassword_Batch_utxTests.FakeNotificationTables;
    INSERT INTO @Items (
        ItemNo, UserID, Username, OTP, EmailTo, PreferredLanguage, PhoneNumber, [Priority], GroupKey, DedupKey
    )
    VALUES
    (1, 11, N'ada', 'A1B2C3', N'ada@example.com', NULL, NULL, NULL, NULL, NULL),
    (2, 12, N'bob', 'B1B2C3 ', N'bob@example.com', NULL, NULL, NULL, NULL, NULL);

    EXEC Add_Notification_ResetPassword_Batch_utxTests.AssertRefused @Items = @Items, @ExpectedPattern = N'%item 2: %OTP%';
END;
GO
CREATE PROCEDURE Add_Notification_ResetPassword_Batch_utxTests.[test Add_Notification_ResetPassword_Batch_utx raises 735707 naming the item when its it has no channel]
AS
BEGIN
    DECLARE @Items dbo.Notification_ResetPasswordItemList;
    EXEC Add_Notification_ResetPassword_Batch_utxTests.FakeNotificationTables;
    INSERT INTO @Items (
        ItemNo, UserID, Username, OTP, EmailTo, PreferredLanguage, PhoneNumber, [Priority], GroupKey, DedupKey
    )
    VALUES
    (1, 11, N'ada', 'A1B2C3', N'ada@example.com', NULL, NULL, NULL, NULL, NULL),
    (2, 12, N'bob', 'B1B2C3', NULL, NULL, NULL, NULL, NULL, NULL);

    EXEC Add_Notification_ResetPassword_Batch_utxTests.AssertRefused @Items = @Items, @ExpectedPattern = N'%item 2: %a notification needs a channel%';
END;
GO
CREATE PROCEDURE Add_Notification_ResetPassword_Batch_utxTests.[test Add_Notification_ResetPassword_Batch_utx raises 735707 naming the item when its EmailTo is not an address]
AS
BEGIN
    DECLARE @Items dbo.Notification_ResetPasswordItemList;
    EXEC Add_Notification_ResetPassword_Batch_utxTests.FakeNotificationTables;
    INSERT INTO @Items (
        ItemNo, UserID, Username, OTP, EmailTo, PreferredLanguage, PhoneNumber, [Priority], GroupKey, DedupKey
    )
    VALUES
    (1, 11, N'ada', 'A1B2C3', N'ada@example.com', NULL, NULL, NULL, NULL, NULL),
    (2, 12, N'bob', 'B1B2C3', N'bob@@example.com', NULL, NULL, NULL, NULL, NULL);

    EXEC Add_Notification_ResetPassword_Batch_utxTests.AssertRefused @Items = @Items, @ExpectedPattern = N'%item 2: EmailTo is not%';
END;
GO
CREATE PROCEDURE Add_Notification_ResetPassword_Batch_utxTests.[test Add_Notification_ResetPassword_Batch_utx raises 735707 naming the item when its PhoneNumber is not international]
AS
BEGIN
    DECLARE @Items dbo.Notification_ResetPasswordItemList;
    EXEC Add_Notification_ResetPassword_Batch_utxTests.FakeNotificationTables;
    INSERT INTO @Items (
        ItemNo, UserID, Username, OTP, EmailTo, PreferredLanguage, PhoneNumber, [Priority], GroupKey, DedupKey
    )
    VALUES
    (1, 11, N'ada', 'A1B2C3', N'ada@example.com', NULL, NULL, NULL, NULL, NULL),
    (2, 12, N'bob', 'B1B2C3', NULL, NULL, '+0155501234', NULL, NULL, NULL);

    EXEC Add_Notification_ResetPassword_Batch_utxTests.AssertRefused @Items = @Items, @ExpectedPattern = N'%item 2: PhoneNumber is not%';
END;
GO
CREATE PROCEDURE Add_Notification_ResetPassword_Batch_utxTests.[test Add_Notification_ResetPassword_Batch_utx raises 735707 naming the item when its PreferredLanguage is not a tag]
AS
BEGIN
    DECLARE @Items dbo.Notification_ResetPasswordItemList;
    EXEC Add_Notification_ResetPassword_Batch_utxTests.FakeNotificationTables;
    INSERT INTO @Items (
        ItemNo, UserID, Username, OTP, EmailTo, PreferredLanguage, PhoneNumber, [Priority], GroupKey, DedupKey
    )
    VALUES
    (1, 11, N'ada', 'A1B2C3', N'ada@example.com', NULL, NULL, NULL, NULL, NULL),
    (2, 12, N'bob', 'B1B2C3', N'bob@example.com', N'en_GB', NULL, NULL, NULL, NULL);

    EXEC Add_Notification_ResetPassword_Batch_utxTests.AssertRefused @Items = @Items, @ExpectedPattern = N'%item 2: %PreferredLanguage%';
END;
GO
CREATE PROCEDURE Add_Notification_ResetPassword_Batch_utxTests.[test Add_Notification_ResetPassword_Batch_utx raises 735707 naming the item when its Priority is out of range]
AS
BEGIN
    DECLARE @Items dbo.Notification_ResetPasswordItemList;
    EXEC Add_Notification_ResetPassword_Batch_utxTests.FakeNotificationTables;
    INSERT INTO @Items (
        ItemNo, UserID, Username, OTP, EmailTo, PreferredLanguage, PhoneNumber, [Priority], GroupKey, DedupKey
    )
    VALUES
    (1, 11, N'ada', 'A1B2C3', N'ada@example.com', NULL, NULL, NULL, NULL, NULL),
    (2, 12, N'bob', 'B1B2C3', N'bob@example.com', NULL, NULL, 40000, NULL, NULL);

    EXEC Add_Notification_ResetPassword_Batch_utxTests.AssertRefused @Items = @Items, @ExpectedPattern = N'%item 2: %Priority%';
END;
GO
CREATE PROCEDURE Add_Notification_ResetPassword_Batch_utxTests.[test Add_Notification_ResetPassword_Batch_utx raises 735707 naming the item when its GroupKey is blank]
AS
BEGIN
    DECLARE @Items dbo.Notification_ResetPasswordItemList;
    EXEC Add_Notification_ResetPassword_Batch_utxTests.FakeNotificationTables;
    INSERT INTO @Items (
        ItemNo, UserID, Username, OTP, EmailTo, PreferredLanguage, PhoneNumber, [Priority], GroupKey, DedupKey
    )
    VALUES
    (1, 11, N'ada', 'A1B2C3', N'ada@example.com', NULL, NULL, NULL, NULL, NULL),
    (2, 12, N'bob', 'B1B2C3', N'bob@example.com', NULL, NULL, NULL, N' ', NULL);

    EXEC Add_Notification_ResetPassword_Batch_utxTests.AssertRefused @Items = @Items, @ExpectedPattern = N'%item 2: %GroupKey%';
END;
GO
CREATE PROCEDURE Add_Notification_ResetPassword_Batch_utxTests.[test Add_Notification_ResetPassword_Batch_utx raises 735707 naming the item when its GroupKey is over 100 characters]
AS
BEGIN
    DECLARE @Items dbo.Notification_ResetPasswordItemList;
    EXEC Add_Notification_ResetPassword_Batch_utxTests.FakeNotificationTables;
    INSERT INTO @Items (
        ItemNo, UserID, Username, OTP, EmailTo, PreferredLanguage, PhoneNumber, [Priority], GroupKey, DedupKey
    )
    VALUES
    (1, 11, N'ada', 'A1B2C3', N'ada@example.com', NULL, NULL, NULL, NULL, NULL),
    (2, 12, N'bob', 'B1B2C3', N'bob@example.com', NULL, NULL, NULL, REPLICATE(N'g', 101), NULL);

    EXEC Add_Notification_ResetPassword_Batch_utxTests.AssertRefused @Items = @Items, @ExpectedPattern = N'%item 2: %GroupKey%';
END;
GO
CREATE PROCEDURE Add_Notification_ResetPassword_Batch_utxTests.[test Add_Notification_ResetPassword_Batch_utx raises 735707 naming the item when its DedupKey is blank]
AS
BEGIN
    DECLARE @Items dbo.Notification_ResetPasswordItemList;
    EXEC Add_Notification_ResetPassword_Batch_utxTests.FakeNotificationTables;
    INSERT INTO @Items (
        ItemNo, UserID, Username, OTP, EmailTo, PreferredLanguage, PhoneNumber, [Priority], GroupKey, DedupKey
    )
    VALUES
    (1, 11, N'ada', 'A1B2C3', N'ada@example.com', NULL, NULL, NULL, NULL, NULL),
    (2, 12, N'bob', 'B1B2C3', N'bob@example.com', NULL, NULL, NULL, NULL, N'');

    EXEC Add_Notification_ResetPassword_Batch_utxTests.AssertRefused @Items = @Items, @ExpectedPattern = N'%item 2: %DedupKey%';
END;
GO
CREATE PROCEDURE Add_Notification_ResetPassword_Batch_utxTests.[test Add_Notification_ResetPassword_Batch_utx raises 735707 naming the item when its DedupKey is over 200 characters]
AS
BEGIN
    DECLARE @Items dbo.Notification_ResetPasswordItemList;
    EXEC Add_Notification_ResetPassword_Batch_utxTests.FakeNotificationTables;
    INSERT INTO @Items (
        ItemNo, UserID, Username, OTP, EmailTo, PreferredLanguage, PhoneNumber, [Priority], GroupKey, DedupKey
    )
    VALUES
    (1, 11, N'ada', 'A1B2C3', N'ada@example.com', NULL, NULL, NULL, NULL, NULL),
    (2, 12, N'bob', 'B1B2C3', N'bob@example.com', NULL, NULL, NULL, NULL, REPLICATE(N'd', 201));

    EXEC Add_Notification_ResetPassword_Batch_utxTests.AssertRefused @Items = @Items, @ExpectedPattern = N'%item 2: %DedupKey%';
END;
GO
CREATE PROCEDURE Add_Notification_ResetPassword_Batch_utxTests.[test Add_Notification_ResetPassword_Batch_utx raises 735707 when no item is given]
AS
BEGIN
    DECLARE @Items dbo.Notification_ResetPasswordItemList;
    EXEC Add_Notification_ResetPassword_Batch_utxTests.FakeNotificationTables;
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 735707, @ExpectedMessagePattern = N'%@Items must hold%';

    EXEC dbo.Add_Notification_ResetPassword_Batch_utx @Items = @Items;
END;
GO
CREATE PROCEDURE Add_Notification_ResetPassword_Batch_utxTests.[test Add_Notification_ResetPassword_Batch_utx raises 735707 and writes nothing when given more than 4000 items]
AS
BEGIN
    DECLARE @Items dbo.Notification_ResetPasswordItemList;
    DECLARE @ErrorNumber INT;
    DECLARE @ErrorMessage NVARCHAR(4000);
    DECLARE @Written INT;
    EXEC Add_Notification_ResetPassword_Batch_utxTests.FakeNotificationTables;
    INSERT INTO @Items (ItemNo, UserID, Username, OTP, EmailTo)
    SELECT TOP (4001)
        ROW_NUMBER() OVER (ORDER BY (SELECT NULL)) AS ItemNo,
        1 AS UserID,
        N'u' AS Username,
        'A1B2' AS OTP,
        N'u@example.com' AS EmailTo
    FROM sys.all_columns AS a
    CROSS JOIN sys.all_columns AS b;

    BEGIN TRY
        EXEC dbo.Add_Notification_ResetPassword_Batch_utx @Items = @Items;
    END TRY
    BEGIN CATCH
        SELECT
            @ErrorNumber = ERROR_NUMBER(),
            @ErrorMessage = ERROR_MESSAGE();
    END CATCH;

    SET @Written = (SELECT COUNT(*) FROM dbo.Notification);
    EXEC tSQLt.AssertEquals @Expected = 735707, @Actual = @ErrorNumber;
    EXEC tSQLt.AssertLike @ExpectedPattern = N'%@Items must hold 1 to 4,000 items%', @Actual = @ErrorMessage;
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @Written;
END;
GO
CREATE PROCEDURE Add_Notification_ResetPassword_Batch_utxTests.[test Add_Notification_ResetPassword_Batch_utx keys items after the last key when it is ahead of the clock]
AS
BEGIN
    DECLARE @Items dbo.Notification_ResetPasswordItemList;
    DECLARE @Last DATETIME2(7) = '2999-01-01T00:00:00';
    DECLARE @Rows INT;
    EXEC Add_Notification_ResetPassword_Batch_utxTests.FakeNotificationTables;
    EXEC Add_Notification_ResetPassword_Batch_utxTests.AddQueued @EnqueuedAt = @Last, @Status = 'Completed', @DedupKey = NULL;
    INSERT INTO @Items (ItemNo, UserID, Username, OTP, EmailTo)
    VALUES
    (1, 1, N'a', 'AAAA', N'a@example.com'),
    (2, 2, N'b', 'BBBB', N'b@example.com');

    EXEC dbo.Add_Notification_ResetPassword_Batch_utx @Items = @Items;

    -- Keys only move forward: the last key plus 1 and 2 microseconds, not the clock's now.
    SELECT @Rows = COUNT(*)
    FROM dbo.Notification AS n
    INNER JOIN dbo.Notification_ResetPassword AS rp ON n.EnqueuedAt = rp.EnqueuedAt
    WHERE n.EnqueuedAt = DATEADD(MICROSECOND, rp.UserID, @Last);
    EXEC tSQLt.AssertEquals @Expected = 2, @Actual = @Rows;
END;
GO
CREATE PROCEDURE Add_Notification_ResetPassword_Batch_utxTests.[test Add_Notification_ResetPassword_Batch_utx writes nothing and returns the holders when every item is a duplicate]
AS
BEGIN
    DECLARE @Items dbo.Notification_ResetPasswordItemList;
    DECLARE @Holder DATETIME2(7) = '2024-01-01T00:00:00';
    DECLARE @Enqueued NVARCHAR(MAX);
    DECLARE @RetCode INT;
    DECLARE @Rows INT;
    EXEC Add_Notification_ResetPassword_Batch_utxTests.FakeNotificationTables;
    EXEC Add_Notification_ResetPassword_Batch_utxTests.AddQueued @EnqueuedAt = @Holder, @Status = 'Pending', @DedupKey = N'reset:11';
    INSERT INTO @Items (ItemNo, UserID, Username, OTP, EmailTo, PhoneNumber, DedupKey)
    VALUES
    (1, 11, N'ada', 'A1B2C3', N'ada@example.com', NULL, N'reset:11'),
    (2, 11, N'ada', 'Z9Z9Z9', NULL, '+14155550123', N'reset:11');

    EXEC @RetCode = dbo.Add_Notification_ResetPassword_Batch_utx
        @Items = @Items,
        @Enqueued = @Enqueued OUTPUT;

    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @RetCode, @Message = N'return code';
    SELECT @Rows = COUNT(*)
    FROM OPENJSON (@Enqueued) WITH (ItemNo INT, EnqueuedAt DATETIME2(7), IsDuplicate BIT) AS j
    WHERE j.IsDuplicate = 1 AND j.EnqueuedAt = @Holder;
    EXEC tSQLt.AssertEquals @Expected = 2, @Actual = @Rows, @Message = N'both items get the holder';
    SELECT
        @Rows = (SELECT COUNT(*) FROM dbo.Notification) + (SELECT COUNT(*) FROM dbo.Notification_ResetPassword)
        + (SELECT COUNT(*) FROM dbo.Notification_Email) + (SELECT COUNT(*) FROM dbo.Notification_Sms);
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @Rows, @Message = N'only the holder';
END;
GO
CREATE PROCEDURE Add_Notification_ResetPassword_Batch_utxTests.[test Add_Notification_ResetPassword_Batch_utx stores ScheduledFor GroupKey and DedupKey when they are given]
AS
BEGIN
    DECLARE @Items dbo.Notification_ResetPasswordItemList;
    DECLARE @Rows INT;
    EXEC Add_Notification_ResetPassword_Batch_utxTests.FakeNotificationTables;
    INSERT INTO @Items (ItemNo, UserID, Username, OTP, EmailTo, ScheduledFor, GroupKey, DedupKey)
    VALUES (1, 11, N'ada', 'A1B2C3', N'ada@example.com', '2030-01-01T08:00:00.1234567', N'g1', N'reset:11');

    EXEC dbo.Add_Notification_ResetPassword_Batch_utx @Items = @Items;

    SELECT @Rows = COUNT(*)
    FROM dbo.Notification AS n
    WHERE
        n.ScheduledFor = '2030-01-01T08:00:00.1234567'
        AND n.GroupKey = N'g1'
        AND n.DedupKey = N'reset:11'
        AND n.UpdatedAt = n.EnqueuedAt;
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @Rows;
END;
GO
CREATE PROCEDURE Add_Notification_ResetPassword_Batch_utxTests.[test Add_Notification_ResetPassword_Batch_utx raises 735707 naming the item when its EmailTo is over 254 characters]
AS
BEGIN
    DECLARE @Items dbo.Notification_ResetPasswordItemList;
    EXEC Add_Notification_ResetPassword_Batch_utxTests.FakeNotificationTables;
    INSERT INTO @Items (
        ItemNo, UserID, Username, OTP, EmailTo, PreferredLanguage, PhoneNumber, [Priority], GroupKey, DedupKey
    )
    VALUES
    (1, 11, N'ada', 'A1B2C3', REPLICATE(N'a', 242) + N'@example.com', NULL, NULL, NULL, NULL, NULL),
    (2, 12, N'bob', 'B1B2C3', REPLICATE(N'b', 243) + N'@example.com', NULL, NULL, NULL, NULL, NULL);

    -- item 1 is 254 characters, the most there may be; item 2 is 255
    EXEC Add_Notification_ResetPassword_Batch_utxTests.AssertRefused @Items = @Items, @ExpectedPattern = N'%item 2: EmailTo is not%';
END;
GO
CREATE PROCEDURE Add_Notification_ResetPassword_Batch_utxTests.[test Add_Notification_ResetPassword_Batch_utx raises 735707 naming the item when its PhoneNumber has 16 digits]
AS
BEGIN
    DECLARE @Items dbo.Notification_ResetPasswordItemList;
    EXEC Add_Notification_ResetPassword_Batch_utxTests.FakeNotificationTables;
    INSERT INTO @Items (
        ItemNo, UserID, Username, OTP, EmailTo, PreferredLanguage, PhoneNumber, [Priority], GroupKey, DedupKey
    )
    VALUES
    (1, 11, N'ada', 'A1B2C3', NULL, NULL, '+123456789012345', NULL, NULL, NULL),
    (2, 12, N'bob', 'B1B2C3', NULL, NULL, '+1234567890123456', NULL, NULL, NULL);

    -- item 1 has 15 digits, E.164's most; item 2 has 16
    EXEC Add_Notification_ResetPassword_Batch_utxTests.AssertRefused @Items = @Items, @ExpectedPattern = N'%item 2: PhoneNumber is not%';
END;
GO
-- Named in each NoTransaction annotation. Not called CleanUp: tSQLt runs a class's CleanUp
-- after such tests by itself, and this would run twice.
CREATE PROCEDURE Add_Notification_ResetPassword_Batch_utxTests.RollbackLeftOpen
AS
BEGIN
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;
END;
GO
--[@tSQLt:NoTransaction]('Add_Notification_ResetPassword_Batch_utxTests.RollbackLeftOpen')
CREATE PROCEDURE Add_Notification_ResetPassword_Batch_utxTests.[test Add_Notification_ResetPassword_Batch_utx raises 735702 when called outside a transaction]
AS
BEGIN
    DECLARE @Items dbo.Notification_ResetPasswordItemList;
    EXEC Add_Notification_ResetPassword_Batch_utxTests.FakeNotificationTables;
    INSERT INTO @Items (ItemNo, UserID, Username, OTP, EmailTo)
    VALUES (1, 11, N'ada', 'A1B2C3', N'ada@example.com');
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 735702;

    EXEC dbo.Add_Notification_ResetPassword_Batch_utx @Items = @Items;
END;
GO
-- Batches: batch 7 open with 1 item, batch 8 sealed (the batch row faked).
CREATE PROCEDURE Add_Notification_ResetPassword_Batch_utxTests.AddBatches
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.QueueBatch', @Defaults = 1;
    INSERT INTO dbo.QueueBatch (BatchID, CallbackQueue, CallbackType, Total, SealedAt)
    VALUES (7, 'AnyJobQueue', 'BatchDone', 1, NULL), (8, 'AnyJobQueue', 'BatchDone', 1, '2024-01-01T00:00:00');
END;
GO
-- The duplicate shares the unfinished holder's row, which is not the batch's: only the
-- inserted notification joins and counts.
CREATE PROCEDURE Add_Notification_ResetPassword_Batch_utxTests.[test Add_Notification_ResetPassword_Batch_utx puts the inserted notifications in the batch when given an open batch]
AS
BEGIN
    DECLARE @Items dbo.Notification_ResetPasswordItemList;
    DECLARE @Holder DATETIME2(7) = '2024-01-01T00:00:00';
    DECLARE @Total INT;
    DECLARE @Batched INT;
    EXEC Add_Notification_ResetPassword_Batch_utxTests.FakeNotificationTables;
    EXEC Add_Notification_ResetPassword_Batch_utxTests.AddBatches;
    EXEC Add_Notification_ResetPassword_Batch_utxTests.AddQueued @EnqueuedAt = @Holder, @Status = 'Pending', @DedupKey = N'reset:11';
    INSERT INTO @Items (ItemNo, UserID, Username, OTP, EmailTo, DedupKey)
    VALUES
    (1, 11, N'ada', 'A1B2C3', N'ada@example.com', N'reset:11'),
    (2, 12, N'bob', 'B1B2C3', N'bob@example.com', NULL);

    EXEC dbo.Add_Notification_ResetPassword_Batch_utx @Items = @Items, @BatchID = 7;

    SELECT @Total = b.Total FROM dbo.QueueBatch AS b
    WHERE b.BatchID = 7;
    SELECT @Batched = COUNT(*) FROM dbo.Notification AS n
    WHERE n.BatchID = 7;
    EXEC tSQLt.AssertEquals @Expected = 2, @Actual = @Total, @Message = N'the batch had 1, and item 2 joined';
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @Batched, @Message = N'item 2 carries the batch';
END;
GO
CREATE PROCEDURE Add_Notification_ResetPassword_Batch_utxTests.[test Add_Notification_ResetPassword_Batch_utx raises 735724 when the batch is sealed]
AS
BEGIN
    DECLARE @Items dbo.Notification_ResetPasswordItemList;
    EXEC Add_Notification_ResetPassword_Batch_utxTests.FakeNotificationTables;
    EXEC Add_Notification_ResetPassword_Batch_utxTests.AddBatches;
    INSERT INTO @Items (ItemNo, UserID, Username, OTP, EmailTo) VALUES (1, 12, N'bob', 'B1B2C3', N'bob@example.com');
    EXEC tSQLt.ExpectException @ExpectedErrorNumber = 735724;

    EXEC dbo.Add_Notification_ResetPassword_Batch_utx @Items = @Items, @BatchID = 8;
END;
GO
