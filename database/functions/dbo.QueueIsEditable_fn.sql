SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.QueueIsEditable_fn: may a worker still write to an item in this state?
   @Status: the state. Seed 000's classification, exactly. */
CREATE OR ALTER FUNCTION dbo.QueueIsEditable_fn(@Status dbo.QueueState)
RETURNS BIT
AS
BEGIN
    IF @Status NOT IN ('Cancelled', 'Paused', 'Terminated', 'Completed', 'PartiallyCompleted')
        RETURN 1;
    RETURN 0;
END;
GO
