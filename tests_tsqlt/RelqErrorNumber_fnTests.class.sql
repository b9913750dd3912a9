SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'RelqErrorNumber_fnTests';
GO
CREATE PROCEDURE RelqErrorNumber_fnTests.[test RelqErrorNumber_fn reads the relq number when 18054 carries one]
AS
BEGIN
    DECLARE @Actual INT = dbo.RelqErrorNumber_fn(
        18054,
        N'Error 735710, severity 16, state 1 was raised, but no message with that error number was found in '
        + N'sys.messages. If error is larger than 50000, make sure the user-defined message is added using '
        + N'sp_addmessage.'
    );
    EXEC tSQLt.AssertEquals @Expected = 735710, @Actual = @Actual;
END;
GO
CREATE PROCEDURE RelqErrorNumber_fnTests.[test RelqErrorNumber_fn reads the number when the text is in another language]
AS
BEGIN
    DECLARE @Actual INT = dbo.RelqErrorNumber_fn(
        18054, N'Der Fehler 735705, Schweregrad 16, Status 1 wurde ausgeloest.'
    );
    EXEC tSQLt.AssertEquals @Expected = 735705, @Actual = @Actual;
END;
GO
CREATE PROCEDURE RelqErrorNumber_fnTests.[test RelqErrorNumber_fn keeps 18054 when the number it carries is no relq number]
AS
BEGIN
    DECLARE @Other INT = dbo.RelqErrorNumber_fn(
        18054, N'Error 60001, severity 16, state 1 was raised, but no message with that error number was found.'
    );
    DECLARE @Longer INT = dbo.RelqErrorNumber_fn(18054, N'Error 7357051, severity 16, state 1 was raised.');
    DECLARE @Zero INT = dbo.RelqErrorNumber_fn(18054, N'Error 735700, severity 16, state 1 was raised.');
    EXEC tSQLt.AssertEquals @Expected = 18054, @Actual = @Other;
    EXEC tSQLt.AssertEquals @Expected = 18054, @Actual = @Longer;
    EXEC tSQLt.AssertEquals @Expected = 18054, @Actual = @Zero;
END;
GO
CREATE PROCEDURE RelqErrorNumber_fnTests.[test RelqErrorNumber_fn keeps the number when the error is not 18054]
AS
BEGIN
    DECLARE @Raised INT = dbo.RelqErrorNumber_fn(735705, N'relq: dbo.Modify_SyncQueue_utx: item has changed');
    DECLARE @Other INT = dbo.RelqErrorNumber_fn(547, N'The INSERT statement conflicted with 735705');
    DECLARE @NoText INT = dbo.RelqErrorNumber_fn(18054, NULL);
    EXEC tSQLt.AssertEquals @Expected = 735705, @Actual = @Raised;
    EXEC tSQLt.AssertEquals @Expected = 547, @Actual = @Other;
    EXEC tSQLt.AssertEquals @Expected = 18054, @Actual = @NoText;
END;
GO
