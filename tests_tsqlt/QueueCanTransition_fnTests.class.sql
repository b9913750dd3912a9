SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
EXEC tSQLt.NewTestClass 'QueueCanTransition_fnTests';
GO
-- tSQLt runs the procedures whose names start with "test ": the spaces are required.
-- The deployed rows of dbo.QueueTransition (database/data) allow a claim.
CREATE PROCEDURE QueueCanTransition_fnTests.[test QueueCanTransition_fn returns 1 when the pair is legal]
AS
BEGIN
    DECLARE @Actual BIT = dbo.QueueCanTransition_fn('Pending', 'Processing');
    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @Actual;
END;
GO
CREATE PROCEDURE QueueCanTransition_fnTests.[test QueueCanTransition_fn returns 0 when the pair is illegal]
AS
BEGIN
    DECLARE @Actual BIT = dbo.QueueCanTransition_fn('Completed', 'Pending');
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @Actual;
END;
GO
-- The rows, not the procedures, say what is legal: a pair is legal exactly when its row exists.
CREATE PROCEDURE QueueCanTransition_fnTests.[test QueueCanTransition_fn follows the rows when they are changed]
AS
BEGIN
    DECLARE @Inserted BIT;
    DECLARE @NotInserted BIT;
    EXEC tSQLt.FakeTable @TableName = N'dbo.QueueTransition';
    INSERT INTO dbo.QueueTransition (FromStatus, ToStatus)
    VALUES ('Completed', 'Pending');

    SET @Inserted = dbo.QueueCanTransition_fn('Completed', 'Pending');
    SET @NotInserted = dbo.QueueCanTransition_fn('Pending', 'Processing');

    EXEC tSQLt.AssertEquals @Expected = 1, @Actual = @Inserted, @Message = N'Completed -> Pending (a row)';
    EXEC tSQLt.AssertEquals @Expected = 0, @Actual = @NotInserted, @Message = N'Pending -> Processing (no row)';
END;
GO
