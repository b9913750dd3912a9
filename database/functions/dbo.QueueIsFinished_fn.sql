SET ANSI_NULLS ON;
SET QUOTED_IDENTIFIER ON;
GO
/* dbo.QueueIsFinished_fn: is this state terminal?
   @Status: the state. Seed 000's classification, exactly. */
CREATE OR ALTER FUNCTION dbo.QueueIsFinished_fn(@Status dbo.QueueState)
RETURNS BIT
AS
BEGIN
    IF @Status NOT IN ('Pending', 'Processing', 'Error', 'Paused')
        RETURN 1;
    RETURN 0;
END;
GO
