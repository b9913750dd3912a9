SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'QueueScheduleRefusal_fnTests';
GO
-- tSQLt runs the procedures whose names start with "test ": the spaces are required.
-- SyncQueue (a job queue) with a job type of the tests' own; Notification is the custom queue.
CREATE PROCEDURE QueueScheduleRefusal_fnTests.FakeTypes
AS
BEGIN
    EXEC tSQLt.FakeTable @TableName = N'dbo.SyncQueueType';
    INSERT INTO dbo.SyncQueueType ([Type])
    VALUES ('ScheduleTestJob');
END;
GO
CREATE PROCEDURE QueueScheduleRefusal_fnTests.[test QueueScheduleRefusal_fn returns NULL when the job queue has the type]
AS
BEGIN
    DECLARE @Actual NVARCHAR(200);
    EXEC QueueScheduleRefusal_fnTests.FakeTypes;

    SET @Actual = dbo.QueueScheduleRefusal_fn(N'SyncQueue', 'ScheduleTestJob');

    EXEC tSQLt.AssertEquals @Expected = NULL, @Actual = @Actual;
END;
GO
CREATE PROCEDURE QueueScheduleRefusal_fnTests.[test QueueScheduleRefusal_fn names the type table when the type is unknown]
AS
BEGIN
    DECLARE @Actual NVARCHAR(200);
    EXEC QueueScheduleRefusal_fnTests.FakeTypes;

    SET @Actual = dbo.QueueScheduleRefusal_fn(N'SyncQueue', 'NoSuchJob');

    EXEC tSQLt.AssertEqualsString @Expected = N'it is not one of dbo.SyncQueueType', @Actual = @Actual;
END;
GO
CREATE PROCEDURE QueueScheduleRefusal_fnTests.[test QueueScheduleRefusal_fn refuses a custom queue when it is Notification]
AS
BEGIN
    DECLARE @Actual NVARCHAR(200);
    EXEC QueueScheduleRefusal_fnTests.FakeTypes;

    SET @Actual = dbo.QueueScheduleRefusal_fn(N'Notification', 'ResetPassword');

    EXEC tSQLt.AssertLike @ExpectedPattern = N'a custom queue:%', @Actual = @Actual;
END;
GO
CREATE PROCEDURE QueueScheduleRefusal_fnTests.[test QueueScheduleRefusal_fn refuses a queue when no job queue has its name]
AS
BEGIN
    DECLARE @Actual NVARCHAR(200);
    EXEC QueueScheduleRefusal_fnTests.FakeTypes;

    SET @Actual = dbo.QueueScheduleRefusal_fn(N'NoSuchQueue', 'ScheduleTestJob');

    EXEC tSQLt.AssertEqualsString @Expected = N'no job queue of this database has that name', @Actual = @Actual;
END;
GO
